package channel

import (
	"strconv"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/units"
)

// MaxVerifyServices bounds the declarations one verify call carries.
const MaxVerifyServices = 256

// VerifyRequest is what one host declares, to be read against what it runs.
// verify changes nothing on the host. The declarations travel on stdin, as
// ensure's do, and the host renders each one itself.
type VerifyRequest struct {
	// OS is the OS the registry says the host runs; a host running another
	// is refused (os_mismatch).
	OS       string          `json:"os"`
	Services []VerifyService `json:"services"`
	// LaunchdDomain is the target's declared launchd domain, as in
	// EnsureRequest: where a darwin host reads its user-scope units.
	LaunchdDomain string `json:"launchd_domain,omitempty"`
}

// VerifyService is one declaration to verify and, when the service has a
// directory entry on this host, the port and address it answers on.
type VerifyService struct {
	Service registry.Service `json:"service"`
	// Port is the directory port; 0 when the service has none here.
	Port int `json:"port,omitempty"`
	// Address is the declared listen address of Port ("" means any).
	Address string `json:"address,omitempty"`
}

// VerifyResult is one UnitCheck per service, in the order asked.
type VerifyResult struct {
	Units []UnitCheck `json:"units"`
}

// UnitCheck is the host's reading of one declared unit: its verdict, its
// file against the declaration's rendering, and who listens where.
type UnitCheck struct {
	Service string        `json:"service"`
	Unit    string        `json:"unit"`
	Scope   string        `json:"scope"`
	Path    string        `json:"path,omitempty"`
	Verdict units.Verdict `json:"verdict"`
	// FileAbsent is true when no file is at the unit's path.
	FileAbsent bool `json:"file_absent,omitempty"`
	// Drift is true when the file's bytes differ from what the declaration
	// renders on this host (also when the file is absent); Diff is the
	// change from the installed file to the rendering.
	Drift bool   `json:"drift,omitempty"`
	Diff  string `json:"diff,omitempty"`
	// RepeatingDropIns are drop-ins systemd applies to the unit that repeat
	// commands of the declaration's rendering, so the unit runs them twice
	// (the next ensure sets them aside, or refuses).
	RepeatingDropIns []string `json:"repeating_dropins,omitempty"`
	// Logs are the unit's last lines when it runs no process after it ran
	// (failed, failing, or stopped with a nonzero exit), oldest first.
	Logs []string `json:"logs,omitempty"`
	// Port and Address echo the request; Listeners are the sockets
	// listening on Port, with their owners.
	Port      int              `json:"port,omitempty"`
	Address   string           `json:"address,omitempty"`
	Listeners []units.Listener `json:"listeners,omitempty"`
	// UnitSockets are the TCP sockets the unit's own processes (its cgroup)
	// listen on, any port; read only when Port is set.
	UnitSockets []UnitSocket `json:"unit_sockets,omitempty"`
	// Protocol is the service-protocol reading (its ready operation) of a
	// declaration naming a protocol executable; nil for the others.
	Protocol *ProtocolReading `json:"protocol,omitempty"`
	// Refusal says which part could not be read and why (a declaration
	// without program and args has no rendering to compare). The rest of
	// the check still holds.
	Refusal *UnitRefusal `json:"refusal,omitempty"`
}

// ProtocolReading is what a declaration's service-protocol executable said
// to ready on the host: running and ready, or the operation that could not
// be read and why.
type ProtocolReading struct {
	Running *bool  `json:"running,omitempty"`
	Ready   *bool  `json:"ready,omitempty"`
	Op      string `json:"op,omitempty"`
	Cause   string `json:"cause,omitempty"`
}

// UnitSocket is one listening socket of a unit's processes.
type UnitSocket struct {
	Address string `json:"address"`
	Port    int    `json:"port"`
	PID     int    `json:"pid,omitempty"`
	Program string `json:"program,omitempty"`
}

// UnitRefusal is a refusal carried inside a result: its code and message.
type UnitRefusal struct {
	Code    refusal.Code `json:"code"`
	Message string       `json:"message"`
}

// Err is r as the one refusal type.
func (r *UnitRefusal) Err() *refusal.Error {
	if r == nil {
		return nil
	}
	return &refusal.Error{Code: r.Code, Message: r.Message}
}

// RefusalOf is err as a UnitRefusal: its code when it is a refusal, else
// the failure code with its message. nil for nil.
func RefusalOf(err error) *UnitRefusal {
	if err == nil {
		return nil
	}
	code, ok := refusal.CodeOf(err)
	if !ok {
		code = "failure"
	}
	return &UnitRefusal{Code: code, Message: err.Error()}
}

// decodeVerify reads the verify request strictly and holds every
// declaration to the grammar's unit, scope, path and port rules and to the
// host's OS.
func decodeVerify(body []byte, goos string) (VerifyRequest, error) {
	var req VerifyRequest
	if err := decodeRequest(VerbVerify, body, &req); err != nil {
		return req, err
	}
	if len(req.Services) > MaxVerifyServices {
		return req, refusef(CodeTooLong, "verify carries %d services, the bound is %d", len(req.Services), MaxVerifyServices)
	}
	for _, vs := range req.Services {
		s := vs.Service
		if err := checkUnit(s.Unit); err != nil {
			return req, err
		}
		scope, err := parseScope(s.EffectiveScope())
		if err != nil {
			return req, err
		}
		cmd := Command{Verb: VerbVerify, Scope: scope, Units: []string{s.Unit}, Path: s.UnitPath}
		if s.UnitPath != "" {
			if err := checkUnitPath(scope, s.Unit, s.UnitPath); err != nil {
				return req, err
			}
		}
		if err := cmd.CheckOS(goos); err != nil {
			return req, err
		}
		if vs.Port < 0 || vs.Port > 65535 {
			return req, refusef(CodeInvalidPort, "port %s of %s is not a whole number from 1 to 65535", strconv.Itoa(vs.Port), s.Unit)
		}
	}
	return req, nil
}
