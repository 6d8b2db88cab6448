package channel

import (
	"context"
	"time"

	"github.com/wisent/stado/register"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/release"
	"github.com/wisent/stado/units"
)

// Host is everything the write half can ask of one host, one typed request
// and one typed result per verb. It has three implementations: the SSH
// client (package channel/sshclient, one verb per remote execution), the
// remote end (Serve, which parses a verb call and hands it to a Host), and
// the local host (package channel/local, over units.Manager, the unit files
// and /proc).
// An in-process Host lets the write half be tested without root.
//
// Errors: a *refusal.Error (or any refusal.Coded) is a refusal — nothing was
// changed and its code crosses the wire unchanged; a *RemoteError names the
// host and the stage a remote call failed at; anything else is a failure of
// the host action. Implementations are safe for concurrent use.
type Host interface {
	// OS is "linux" or "darwin"; it selects which unit identities are valid.
	OS() string
	// Version says who answers: stado's version, the protocol, the OS and
	// the login user's home.
	Version(ctx context.Context) (VersionResult, error)
	// Ensure is a whole ensure in one call: render the declaration on the
	// host, install only when the bytes differ, reload, start or restart,
	// and confirm the unit's own process holds for the settle time.
	Ensure(ctx context.Context, req EnsureRequest) (EnsureResult, error)
	UnitInstall(ctx context.Context, req InstallRequest) (units.InstallResult, error)
	UnitRemove(ctx context.Context, req RemoveRequest) (RemoveResult, error)
	UnitStart(ctx context.Context, u UnitRef) (units.Verdict, error)
	UnitStop(ctx context.Context, u UnitRef) (units.Verdict, error)
	UnitRestart(ctx context.Context, u UnitRef) (units.Verdict, error)
	// UnitShow reads verdicts only; UnitFile adds the unit's file.
	UnitShow(ctx context.Context, req ShowRequest) (ShowResult, error)
	UnitFile(ctx context.Context, u UnitRef) (FileResult, error)
	UnitLogs(ctx context.Context, req LogsRequest) (LogsResult, error)
	UnitEnv(ctx context.Context, u UnitRef) (EnvResult, error)
	UnitList(ctx context.Context, scope string) (ListResult, error)
	PortOwner(ctx context.Context, port int) (PortOwnerResult, error)
	RepairStep(ctx context.Context, req StepRequest) (StepResult, error)
	// Verify reads every declaration of the request against the host,
	// changing nothing: verdict, file against rendering, port owners.
	Verify(ctx context.Context, req VerifyRequest) (VerifyResult, error)
	// Recoveries reads the host's recovery register, changing nothing.
	Recoveries(ctx context.Context) (RecoveriesResult, error)
	// ReleaseActivate makes one product version active on the host in one
	// call: fetch and verify the signed bytes, install the immutable image,
	// keep the active image as the exact backup, switch, restart the unit
	// and prove the takeover; on a failed proof restore the backup and
	// prove it serves again (package release/hostend).
	ReleaseActivate(ctx context.Context, req release.ActivateRequest) (release.ActivateResult, error)
	// ReleaseState reads the host's release state and which image the named
	// units run, changing nothing.
	ReleaseState(ctx context.Context, req release.StateRequest) (release.StateResult, error)
}

// Connector returns the Host of a target; the write half takes one, built
// by its caller (the SSH client's Pool.Connect, or an in-process Host).
type Connector func(t registry.Target) Host

// UnitRef names one unit of one manager: scope "system" or "user", and a
// systemd unit name or launchd label. Domain is the launchd domain a
// user unit of a darwin host is acted on in (the target's launchd_domain,
// as EnsureRequest.LaunchdDomain); "" is gui/<uid> of the login user. The
// acting verbs carry it (unit-start, unit-stop, unit-restart,
// unit-remove); the others read the scope's own manager.
type UnitRef struct {
	Scope  string `json:"scope"`
	Unit   string `json:"unit"`
	Domain string `json:"launchd_domain,omitempty"`
}

// Ensure modes.
const (
	ModeApply = "apply" // change the host
	ModePlan  = "plan"  // say what apply would do, change nothing
)

// EnsureRequest is one declaration to make true on a host. The host renders
// it (it knows its own home, which places user units and launchd logs).
type EnsureRequest struct {
	// OS is the OS the registry says the host runs; a host running another
	// is refused (os_mismatch) before anything is read.
	OS      string           `json:"os"`
	Service registry.Service `json:"service"`
	// LaunchdDomain is the target's declared launchd domain
	// (registry.Target.LaunchdDomain): on darwin the domain a user-scope
	// unit is bootstrapped in instead of gui/<uid> of the channel's user.
	// Only with OS darwin; "" keeps gui/<uid>.
	LaunchdDomain string `json:"launchd_domain,omitempty"`
	// Settle is how long a newly started process must keep its pid; Wait
	// bounds the whole confirmation.
	Settle time.Duration `json:"settle"`
	Wait   time.Duration `json:"wait"`
	// Mode is ModeApply or ModePlan.
	Mode string `json:"mode"`
	// Serving, for a service with a directory entry on this host, asks the
	// host to read who listens on that port once the unit is confirmed, in
	// the same call (EnsureResult.Serving): the write half's serving wait
	// starts from that reading instead of a round trip of its own.
	Serving *ServingPort `json:"serving,omitempty"`
}

// ServingPort is the directory port a service answers on, and its declared
// listen address ("" means any).
type ServingPort struct {
	Port    int    `json:"port"`
	Address string `json:"address,omitempty"`
}

// Bounds of an ensure's timing.
const (
	MaxSettle = 10 * time.Minute
	MaxWait   = 30 * time.Minute
)

// Run actions of an ensure.
const (
	RunNone      = "none"
	RunStarted   = "started"
	RunRestarted = "restarted"
)

// EnsureResult is what an ensure did (or, in plan mode, would do), with the
// evidence: the verdict read on the host after the settle time and, when the
// unit did not hold, its last log lines.
type EnsureResult struct {
	Unit string `json:"unit"`
	Path string `json:"path"`
	// Install is installed, updated or unchanged.
	Install string `json:"install"`
	// Run is started, restarted or none.
	Run     string        `json:"run"`
	Verdict units.Verdict `json:"verdict"`
	// Confirmed is true when the unit's process held for the settle time
	// (or was already running unchanged).
	Confirmed bool     `json:"confirmed"`
	Logs      []string `json:"logs,omitempty"`
	// Diff is the unit file's change, old to new (plan mode only).
	Diff string `json:"diff,omitempty"`
	// Serving is the host's verify reading of the unit and its directory
	// port, taken right after the unit was confirmed; only in apply mode,
	// when the request asked for it and the reading could be taken.
	Serving *UnitCheck `json:"serving,omitempty"`
	// SetAside are the host's drop-ins that repeated commands the
	// declaration already runs and held nothing else: each was renamed
	// (in plan mode: would be) so systemd no longer applies it.
	SetAside []SetAsideDropIn `json:"set_aside,omitempty"`
}

// SetAsideDropIn is one drop-in ensure set aside, its text kept on the host.
type SetAsideDropIn struct {
	Path string `json:"path"`
	// How is SetAsideRenamed or SetAsideMasked.
	How string `json:"how"`
	// To is the drop-in's new name in its own directory (renamed), or the
	// link to /dev/null of the same name in the unit's own drop-in
	// directory that systemd reads in its place, for this unit only
	// (masked).
	To   string   `json:"to"`
	Keys []string `json:"keys"` // the directives whose commands it repeated
}

// How a drop-in was set aside.
const (
	// SetAsideRenamed: a drop-in in the unit's own directory under the
	// operator's configuration was renamed to a name systemd does not
	// read (only *.conf is read).
	SetAsideRenamed = "renamed"
	// SetAsideMasked: a drop-in other units share (a template's, a name
	// prefix's) or a package's was left as it is and masked for this unit.
	SetAsideMasked = "masked"
)

// InstallRequest writes a unit file. Path may be empty: the host places the
// unit in its scope's directory.
type InstallRequest struct {
	UnitRef
	Path    string `json:"path,omitempty"`
	Content []byte `json:"-"`
}

// RemoveRequest stops, unloads and deletes a unit. Path may be empty as in
// InstallRequest.
type RemoveRequest struct {
	UnitRef
	Path string `json:"path,omitempty"`
}

// RemoveResult is what unit-remove did.
type RemoveResult struct {
	Unit    string `json:"unit"`
	Path    string `json:"path"`
	Removed bool   `json:"removed"` // a file was there
}

// ShowRequest reads the verdicts of 1..MaxShowUnits units of one scope.
type ShowRequest struct {
	Scope string   `json:"scope"`
	Units []string `json:"units"`
}

// ShowResult is the verdicts, in the order asked.
type ShowResult struct {
	Units []units.Verdict `json:"units"`
}

// FileResult is a unit's verdict and, when the init system loaded it from a
// file, that file.
type FileResult struct {
	Verdict units.Verdict   `json:"verdict"`
	File    *units.UnitFile `json:"file,omitempty"`
}

// LogsRequest reads the last Lines lines of a unit's program.
type LogsRequest struct {
	UnitRef
	Lines int `json:"lines"`
}

// LogsResult is a unit's last lines, oldest first.
type LogsResult struct {
	Unit  string   `json:"unit"`
	Lines []string `json:"lines"`
}

// EnvResult is the environment a unit's file (and its drop-ins) give its
// program, values included: masking is the caller's business.
type EnvResult struct {
	Unit string            `json:"unit"`
	Path string            `json:"path"`
	Env  map[string]string `json:"env"`
	// Source is "file" when read from the unit file, "systemd" when the file
	// is one a declaration cannot represent and systemd's own reading of its
	// Environment= was taken instead.
	Source string `json:"source"`
}

// ListResult names the services a manager holds, sorted.
type ListResult struct {
	Units []string `json:"units"`
}

// PortOwnerResult is every socket listening on a TCP port and its owner.
type PortOwnerResult struct {
	Port      int              `json:"port"`
	Listeners []units.Listener `json:"listeners"`
}

// StepRequest runs one repair step of the catalog with the caller's values
// of the names the step needs.
type StepRequest struct {
	Step string   `json:"step"`
	Env  []EnvVar `json:"env,omitempty"`
}

// StepResult is what one repair step did: the register's record of a step,
// so a step's result is written to the register as the host returned it.
type StepResult = register.StepResult

// VersionResult is what version reports.
type VersionResult struct {
	Version  string `json:"version"`
	Protocol int    `json:"protocol"`
	OS       string `json:"os"`
	Home     string `json:"home"`
	User     string `json:"user,omitempty"`
}
