package fleet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/units"
)

// The stages a verify names for a host it could not read.
const (
	StageResolve   = "resolve"   // the host's address or ssh_config could not be resolved
	StageConnect   = "connect"   // no TCP connection (refused, unreachable, timed out)
	StageHandshake = "handshake" // TCP connected, the SSH key exchange did not finish
	StageHostKey   = "host_key"  // the host key is unknown, changed or revoked
	StageAuth      = "auth"      // no identity the server accepted
	StageCommand   = "command"   // connected; the remote program refused or failed
)

// Port states of a ServiceVerify.
const (
	PortOwned     = units.PortOwned     // the unit's processes listen on the declared port and address
	PortElsewhere = units.PortElsewhere // something else listens there (another process or unit)
	PortFree      = units.PortFree      // nothing listens on the declared port and address
)

// VerifyOptions say what to verify: every declared service of every
// target, or only Name, or only the targets in Hosts.
type VerifyOptions struct {
	Name  string   // a service name or unit; "" means every declared service
	Hosts []string // "" means every target (declaring Name, when set)
	// ReachOnly, when not nil, names the hosts whose call carries no
	// declaration: it proves the host reachable and reads nothing (the
	// autonomy cycle asks it of hosts whose beacon already says every
	// unit's state and drift).
	ReachOnly func(host string) bool
}

// VerifyResult is one verify sweep: one HostVerify per target, in registry
// order.
type VerifyResult struct {
	Hosts []HostVerify `json:"hosts"`
}

// HostVerify is one host's answer: reachable with a check per declared
// service, or the stage its one call failed at.
type HostVerify struct {
	Host      string `json:"host"`
	Reachable bool   `json:"reachable"`
	// Stage is where the call failed (StageResolve ... StageCommand); ""
	// when Reachable.
	Stage string     `json:"stage,omitempty"`
	Error *HostError `json:"error,omitempty"`
	// Services are the host's declared services (those named), in
	// declaration order; empty when the host was not reachable or was
	// asked ReachOnly.
	Services []ServiceVerify `json:"services"`
	// ReachOnly is true when the call read nothing but reachability
	// (VerifyOptions.ReachOnly).
	ReachOnly bool `json:"reach_only,omitempty"`
}

// ServiceVerify is one declared service as its host runs it.
type ServiceVerify struct {
	Service string `json:"service"`
	Unit    string `json:"unit"`
	Scope   string `json:"scope"`
	Path    string `json:"path,omitempty"`
	// Loaded is true when the init system holds the unit.
	Loaded bool `json:"loaded"`
	// State is the verdict's: active, inactive, failed, failing or missing.
	State string `json:"state"`
	// Evidence is the verdict (pid, last exit, starts, the init system's
	// words) and, for a unit that ran and runs no more, its last lines.
	Evidence units.Verdict `json:"evidence"`
	Logs     []string      `json:"logs,omitempty"`
	// FileAbsent is true when no unit file is at the declared path.
	FileAbsent bool `json:"file_absent,omitempty"`
	// Drift is true when the installed bytes differ from the declaration's
	// rendering (an absent file drifts too); Diff goes installed to
	// rendered.
	Drift bool   `json:"drift,omitempty"`
	Diff  string `json:"diff,omitempty"`
	// RepeatingDropIns are drop-ins on the host that repeat commands of
	// the declaration's rendering, so the unit runs them twice; ensure sets
	// them aside (docs/units.md).
	RepeatingDropIns []string `json:"repeating_dropins,omitempty"`
	// Port is the service's directory port on this host (0: none), Address
	// the declared listen address, PortState one of PortOwned,
	// PortElsewhere, PortFree ("" without a port), PortOwners every
	// listener on that port and address.
	Port       int              `json:"port,omitempty"`
	Address    string           `json:"address,omitempty"`
	PortState  string           `json:"port_state,omitempty"`
	PortOwners []units.Listener `json:"port_owners,omitempty"`
	// UnitSockets are the ports the unit's own processes listen on.
	UnitSockets []channel.UnitSocket `json:"unit_sockets,omitempty"`
	// Refusal says what could not be checked and why, e.g.
	// declaration_incomplete: a declaration without program and args has no
	// rendering, so Drift is not decided.
	Refusal *channel.UnitRefusal `json:"refusal,omitempty"`
}

// Clean is true when the service is active, its file holds the rendered
// bytes with no drop-in repeating its commands, and its port (if any) is
// its own, with nothing refused.
func (s ServiceVerify) Clean() bool {
	return s.State == units.StateActive && !s.Drift && !s.FileAbsent && s.Refusal == nil && len(s.RepeatingDropIns) == 0 &&
		(s.Port == 0 || s.PortState == PortOwned)
}

// Clean is true when every host was reachable and every service clean.
func (r *VerifyResult) Clean() bool {
	for _, h := range r.Hosts {
		if !h.Reachable {
			return false
		}
		for _, s := range h.Services {
			if !s.Clean() {
				return false
			}
		}
	}
	return true
}

// Verify reads every declared service (of o.Name, on o.Hosts) on its host:
// one channel call per host, hosts fanned out at most f.Parallel at once,
// nothing changed anywhere. A host it cannot reach is a HostVerify with
// its stage, not an error; each (if not nil) gets every host as it
// completes. The error is a refusal decided before any host (an unknown
// target or service).
func (f *Fleet) Verify(ctx context.Context, o VerifyOptions, each func(HostVerify)) (*VerifyResult, error) {
	targets, err := f.verifyTargets(o)
	if err != nil {
		return nil, err
	}
	reachOnly := func(host string) bool { return o.ReachOnly != nil && o.ReachOnly(host) }
	list, _ := fanOut(ctx, f, "service verify", targets, func(ctx context.Context, t registry.Target) (HostVerify, error) {
		if reachOnly(t.Name) {
			return f.reachOne(ctx, t)
		}
		return f.verifyOne(ctx, t, o.Name)
	}, func(r *HostVerify, host string, err error) {
		r.Host, r.Reachable, r.ReachOnly = host, err == nil, reachOnly(host)
		if err != nil {
			r.Error = DescribeHostError(host, err)
			r.Stage = VerifyStage(err)
			r.Services = nil
		}
		if r.Services == nil {
			r.Services = []ServiceVerify{}
		}
	}, each)
	return &VerifyResult{Hosts: list}, nil
}

// verifyTargets are the targets o names, each declaring o.Name when set.
func (f *Fleet) verifyTargets(o VerifyOptions) ([]registry.Target, error) {
	if o.Name != "" {
		targets, _, err := f.declaring(o.Name, o.Hosts)
		return targets, err
	}
	if len(o.Hosts) == 0 {
		return append([]registry.Target(nil), f.Doc.Targets...), nil
	}
	var targets []registry.Target
	for _, h := range dedupe(o.Hosts) {
		t, err := f.Target(h)
		if err != nil {
			return nil, err
		}
		targets = append(targets, t)
	}
	return targets, nil
}

// VerifyRequest is the verify request of target t: its declarations (only
// name's when set) with each one's directory port and address.
func (f *Fleet) VerifyRequest(t registry.Target, name string) channel.VerifyRequest {
	req := channel.VerifyRequest{OS: t.OS, LaunchdDomain: t.LaunchdDomain, Services: make([]channel.VerifyService, 0, len(t.Services))}
	for _, s := range t.Services {
		if name != "" && s.Name != name && s.Unit != name {
			continue
		}
		vs := channel.VerifyService{Service: s}
		if e, ok := f.Doc.DirectoryEntryOn(s.Name, t.Name); ok {
			vs.Port, vs.Address = e.Port, f.Doc.ListenAddress(e)
		}
		req.Services = append(req.Services, vs)
	}
	return req
}

func (f *Fleet) verifyOne(ctx context.Context, t registry.Target, name string) (HostVerify, error) {
	hv := HostVerify{Host: t.Name}
	// A host that declares nothing is still asked: the call is what proves
	// it reachable.
	req := f.VerifyRequest(t, name)
	h, err := f.host(t)
	if err != nil {
		return hv, err
	}
	res, err := h.Verify(ctx, req)
	if err != nil {
		return hv, err
	}
	for i, c := range res.Units {
		if i >= len(req.Services) {
			break
		}
		hv.Services = append(hv.Services, serviceVerify(c))
	}
	return hv, nil
}

// reachOne is one call to t carrying no declaration: it proves the host
// reachable (and of the declared OS) and reads nothing.
func (f *Fleet) reachOne(ctx context.Context, t registry.Target) (HostVerify, error) {
	hv := HostVerify{Host: t.Name, ReachOnly: true}
	h, err := f.host(t)
	if err != nil {
		return hv, err
	}
	_, err = h.Verify(ctx, channel.VerifyRequest{OS: t.OS, LaunchdDomain: t.LaunchdDomain, Services: []channel.VerifyService{}})
	return hv, err
}

// serviceVerify reads one host check into the fleet's terms.
func serviceVerify(c channel.UnitCheck) ServiceVerify {
	sv := ServiceVerify{Service: c.Service, Unit: c.Unit, Scope: c.Scope, Path: c.Path,
		Loaded: c.Verdict.State != units.StateMissing && c.Verdict.State != "", State: c.Verdict.State,
		Evidence: c.Verdict, Logs: c.Logs, FileAbsent: c.FileAbsent, Drift: c.Drift, Diff: c.Diff, RepeatingDropIns: c.RepeatingDropIns,
		Port: c.Port, Address: c.Address, UnitSockets: c.UnitSockets, Refusal: c.Refusal}
	if c.Port > 0 {
		sv.PortState, sv.PortOwners = PortOwnership(c.Unit, c.Address, c.Listeners)
	}
	return sv
}

// PortOwnership says whether unit owns the declared address's port from
// the listeners on that port (units.PortOwnership, which the host end of
// a release activation reads too).
func PortOwnership(unit, address string, ls []units.Listener) (string, []units.Listener) {
	return units.PortOwnership(unit, address, ls)
}

// AddressCovers is units.AddressCovers.
func AddressCovers(listen, declared string) bool { return units.AddressCovers(listen, declared) }

// VerifyStage names the stage a host's verify call failed at, from the
// channel's error: resolve, connect, handshake, host_key, auth or command.
func VerifyStage(err error) string {
	var re *channel.RemoteError
	if !errors.As(err, &re) {
		if _, refused := refusal.CodeOf(err); refused {
			return StageCommand
		}
		return StageConnect
	}
	switch re.Stage {
	case channel.StageHostKey:
		return StageHostKey
	case channel.StageAuth:
		return StageAuth
	case channel.StageRemoteRefusal, channel.StageRemoteExit:
		return StageCommand
	}
	var dns *net.DNSError
	var op *net.OpError
	// A cause that crossed the keeper's socket keeps only its message:
	// the standard library's dial and lookup errors are read from it.
	msg := ""
	if re.Err != nil {
		msg = re.Err.Error()
	}
	switch {
	case errors.As(err, &dns), strings.Contains(msg, "lookup ") && strings.Contains(msg, "no such host"):
		return StageResolve
	case re.Address == "" && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled):
		// Resolve failed before any address was known.
		return StageResolve
	case errors.As(err, &op) && op.Op == "dial", strings.HasPrefix(msg, "dial tcp"), strings.HasPrefix(msg, "keeper connection lost"):
		return StageConnect
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return StageConnect
	default:
		return StageHandshake
	}
}

// Lines of one host's verify: its reachability, then each service with its
// findings and, for drift, the diff.
func (h HostVerify) Lines() []string {
	if !h.Reachable {
		msg := ""
		if h.Error != nil {
			msg = ": " + h.Error.Message
		}
		return []string{fmt.Sprintf("%s  unreachable at %s%s", h.Host, h.Stage, msg)}
	}
	out := []string{fmt.Sprintf("%s  reachable, %d service(s)", h.Host, len(h.Services))}
	for _, s := range h.Services {
		out = append(out, s.Lines()...)
	}
	return out
}

// Lines of one service's verify, indented below its host.
func (s ServiceVerify) Lines() []string {
	word := "clean"
	if !s.Clean() {
		word = "needs attention"
	}
	v := s.Evidence
	line := fmt.Sprintf("  %s (%s): %s, %s", s.Service, s.Unit, word, orDash(s.State))
	if v.PID > 0 {
		line += fmt.Sprintf(" pid %d", v.PID)
	}
	if v.Starts > 0 && v.State != units.StateActive {
		line += fmt.Sprintf(", last exit %d, started %d time(s)", v.LastExit, v.Starts)
	}
	if v.Detail != "" {
		line += " (" + v.Detail + ")"
	}
	out := []string{line}
	add := func(format string, args ...any) { out = append(out, "    "+fmt.Sprintf(format, args...)) }
	switch {
	case s.FileAbsent:
		add("unit file: absent at %s", s.Path)
	case s.Drift:
		add("unit file: drifted from the declaration at %s", s.Path)
	case s.Refusal == nil:
		add("unit file: as declared")
	}
	for _, d := range s.RepeatingDropIns {
		add("drop-in %s repeats commands the declaration already runs (service ensure sets it aside)", d)
	}
	if s.Port > 0 {
		at := hostPort(s.Address, s.Port)
		switch s.PortState {
		case PortOwned:
			l := s.PortOwners[0]
			add("port %s: owned by the unit (pid %d, %s)", at, l.PID, orDash(l.Program))
		case PortElsewhere:
			add("port %s: held by %s", at, holders(s.PortOwners))
		default:
			add("port %s: nothing listens", at)
		}
		if s.PortState != PortOwned && len(s.UnitSockets) > 0 {
			add("the unit listens on %s", socketsKey(s.UnitSockets))
		}
	}
	if s.Refusal != nil {
		add("%s: %s", s.Refusal.Code, s.Refusal.Message)
	}
	if v.Sentence != "" {
		add("%s", v.Sentence)
	}
	if l := LastLogLine(s.Logs); l != "" {
		add("last line: %s", l)
	}
	if s.Drift && s.Diff != "" {
		for _, d := range strings.Split(strings.TrimSuffix(s.Diff, "\n"), "\n") {
			add("%s", d)
		}
	}
	return out
}

// Findings counts the services that are not clean and the hosts not
// reached.
func (r *VerifyResult) Findings() (services, unreachable int) {
	for _, h := range r.Hosts {
		if !h.Reachable {
			unreachable++
			continue
		}
		for _, s := range h.Services {
			if !s.Clean() {
				services++
			}
		}
	}
	return services, unreachable
}
