package fleet

import (
	"context"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/units"
)

// RestartOptions name a declared service and, optionally, its hosts.
type RestartOptions struct {
	Name   string
	Hosts  []string // default: every target declaring Name
	DryRun bool
}

// RestartOutcome is one host's outcome of restart.
type RestartOutcome struct {
	Host    string         `json:"host"`
	OK      bool           `json:"ok"`
	Service string         `json:"service"`
	Unit    string         `json:"unit"`
	Verdict *units.Verdict `json:"verdict,omitempty"`
	DryRun  bool           `json:"dry_run,omitempty"`
	Error   *HostError     `json:"error,omitempty"`
}

// Restart restarts the declared unit through its init system on each host
// (one channel call each), clearing a failed state first. each gets every
// host's outcome as it completes.
func (f *Fleet) Restart(ctx context.Context, o RestartOptions, each func(RestartOutcome)) ([]RestartOutcome, error) {
	targets, decl, err := f.declaring(o.Name, o.Hosts)
	if err != nil {
		return nil, err
	}
	return fanOut(ctx, f, "service restart "+o.Name, targets, func(ctx context.Context, t registry.Target) (RestartOutcome, error) {
		s := decl[t.Name]
		r := RestartOutcome{Service: s.Name, Unit: s.Unit, DryRun: o.DryRun}
		if o.DryRun {
			return r, nil
		}
		h, err := f.host(t)
		if err != nil {
			return r, err
		}
		v, err := h.UnitRestart(ctx, actingRef(t, s))
		if err == nil {
			r.Verdict = &v
		}
		return r, err
	}, func(r *RestartOutcome, host string, err error) {
		r.Service, r.Unit = decl[host].Name, decl[host].Unit // also when cancelled before it started
		r.Host, r.OK, r.Error = host, err == nil, DescribeHostError(host, err)
	}, each)
}

// LogsResult is the last lines of a unit on a host.
type LogsResult struct {
	Host    string     `json:"host,omitempty"`
	Service string     `json:"service,omitempty"`
	Unit    string     `json:"unit"`
	Lines   []string   `json:"lines"`
	Error   *HostError `json:"error,omitempty"`
}

// checkLines refuses a log window outside 1..channel.MaxLogLines.
func checkLines(n int) error {
	if n < 1 || n > channel.MaxLogLines {
		return refusal.New(refusal.Usage, "--lines must be between 1 and %d", channel.MaxLogLines)
	}
	return nil
}

// Logs reads the last lines a declared service (or a catalog product's
// unit) printed on host.
func (f *Fleet) Logs(ctx context.Context, name, host string, lines int) (LogsResult, error) {
	res := LogsResult{Host: host, Service: name, Lines: []string{}}
	if err := checkLines(lines); err != nil {
		return res, err
	}
	t, err := f.Target(host)
	if err != nil {
		return res, err
	}
	var svc registry.Service
	if s, ok := declaredAs(f.Catalog, t, name); ok { // sources.go
		svc = *s
	} else {
		p, found := catalog.OrShipped(f.Catalog).Entry(name)
		if !found || p.Units.For(t.OS) == "" {
			return res, NotManaged(name, t.Name)
		}
		svc = p.Declaration(t.OS, registry.ScopeSystem)
	}
	res.Service, res.Unit = svc.Name, svc.Unit
	return f.unitLogs(ctx, t, channel.UnitRef{Scope: svc.EffectiveScope(), Unit: svc.Unit}, lines, res)
}

// UnitLogs reads the last lines of any loaded unit on host.
func (f *Fleet) UnitLogs(ctx context.Context, u channel.UnitRef, host string, lines int) (LogsResult, error) {
	res := LogsResult{Host: host, Unit: u.Unit, Lines: []string{}}
	if err := checkLines(lines); err != nil {
		return res, err
	}
	t, err := f.Target(host)
	if err != nil {
		return res, err
	}
	return f.unitLogs(ctx, t, u, lines, res)
}

func (f *Fleet) unitLogs(ctx context.Context, t registry.Target, u channel.UnitRef, lines int, res LogsResult) (LogsResult, error) {
	h, err := f.host(t)
	if err == nil {
		var lr channel.LogsResult
		lr, err = h.UnitLogs(ctx, channel.LogsRequest{UnitRef: u, Lines: lines})
		if lr.Lines != nil {
			res.Lines = lr.Lines
		}
	}
	if err != nil {
		err = notLoadedOn(err, u.Unit, t.Name)
		res.Error = DescribeHostError(t.Name, err)
	}
	return res, err
}

// EnvResult is the environment a declared service's installed unit gives
// its program, masked unless asked.
type EnvResult struct {
	Host    string            `json:"host"`
	Service string            `json:"service"`
	Unit    string            `json:"unit"`
	Masked  bool              `json:"masked"`
	Path    string            `json:"path,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Source  string            `json:"source,omitempty"`
	Error   *HostError        `json:"error,omitempty"`
}

// Env reads the environment of host's declaration name from the installed
// unit (one channel call).
func (f *Fleet) Env(ctx context.Context, name, host string, showValues bool) (EnvResult, error) {
	res := EnvResult{Host: host, Service: name, Masked: !showValues}
	t, s, err := f.Declared(host, name)
	if err != nil {
		return res, err
	}
	res.Service, res.Unit = s.Name, s.Unit
	h, err := f.host(t)
	if err == nil {
		var er channel.EnvResult
		er, err = h.UnitEnv(ctx, channel.UnitRef{Scope: s.EffectiveScope(), Unit: s.Unit})
		res.Path, res.Source, res.Env = er.Path, er.Source, MaskEnv(er.Env, showValues)
	}
	if err != nil {
		err = notLoadedOn(err, s.Unit, t.Name)
		res.Error = DescribeHostError(t.Name, err)
		return res, err
	}
	if res.Env == nil {
		res.Env = map[string]string{}
	}
	return res, nil
}

// UnitShowResult is a loaded unit's state on a host.
type UnitShowResult struct {
	Host    string         `json:"host"`
	Unit    string         `json:"unit"`
	Path    string         `json:"path,omitempty"`
	Verdict *units.Verdict `json:"verdict,omitempty"`
	Error   *HostError     `json:"error,omitempty"`
}

// UnitShow reads any loaded unit's verdict and file path on host (one
// channel call). A unit the host does not hold is refused with not_found.
func (f *Fleet) UnitShow(ctx context.Context, u channel.UnitRef, host string) (UnitShowResult, error) {
	res := UnitShowResult{Host: host, Unit: u.Unit}
	t, err := f.Target(host)
	if err != nil {
		return res, err
	}
	h, err := f.host(t)
	var fr channel.FileResult
	if err == nil {
		fr, err = h.UnitFile(ctx, u)
	}
	if err == nil && fr.Verdict.State == units.StateMissing {
		err = refusal.New(refusal.NotFound, "unit %s is not loaded on %s", u.Unit, t.Name)
	}
	if err != nil {
		res.Error = DescribeHostError(t.Name, err)
		return res, err
	}
	res.Verdict = &fr.Verdict
	if fr.File != nil {
		res.Path = fr.File.Path
	}
	return res, nil
}

// ServiceLogs reads the last lines of declaration s's log on target t
// through connect, reading no registry: what `service status --lines`
// shows beside a row the beacons gave. The error is the host's as it came
// (a refusal, or a *channel.RemoteError naming the stage).
func ServiceLogs(ctx context.Context, connect channel.Connector, t registry.Target, s registry.Service, lines int) ([]string, error) {
	if connect == nil {
		return nil, refusal.New(refusal.NoManager, "no host channel to reach %s", t.Name)
	}
	res, err := connect(t).UnitLogs(ctx, channel.LogsRequest{UnitRef: channel.UnitRef{Scope: s.EffectiveScope(), Unit: s.Unit}, Lines: lines})
	return res.Lines, err
}

// actingRef is the unit of s on t for the verbs that act on it (restart,
// stop, remove): a user unit of a darwin target carries the target's
// declared launchd domain, so it is acted on where ensure put it.
func actingRef(t registry.Target, s registry.Service) channel.UnitRef {
	u := channel.UnitRef{Scope: s.EffectiveScope(), Unit: s.Unit}
	if t.OS == registry.OSDarwin && u.Scope == registry.ScopeUser {
		u.Domain = t.LaunchdDomain
	}
	return u
}
