package beacon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/units"
)

// StateUnobserved is a declared unit the pass could not read because its
// own manager could not be read: a user whose systemd manager or launchd
// domain is not running, a user the host does not know. The report's
// sentence says why; it is never a confident missing.
const StateUnobserved = "unobserved"

// UserManagers opens the user-scope manager of a user (units.UserManagers).
type UserManagers interface {
	Manager(ctx context.Context, user string) (units.Manager, error)
	// Forget drops a manager that failed, so the next call connects afresh.
	Forget(user string)
}

// ServiceObserver is an Observer that reads each declared service through
// the manager of its scope: system units through the system manager, and
// user-scope units through the manager of the user they belong to
// (units.ScopeOwner of the target). The runner prefers it to Observe.
type ServiceObserver interface {
	// ObserveServices returns one report per service of t, in order, then
	// one per undeclared unit, and the refusals met on the way (a user
	// manager that is not running). A service whose manager cannot be read
	// is reported StateUnobserved with the cause as its sentence.
	ObserveServices(ctx context.Context, t *registry.Target, undeclared []string) ([]UnitReport, []Refusal, error)
	// ServiceLastLine is LastLine of a declared service, read from the
	// journal or log of its own manager.
	ServiceLastLine(ctx context.Context, t *registry.Target, s registry.Service) (string, error)
}

// UnitsObserver observes this host through a units.Manager (systemd over
// D-Bus, launchd over launchctl). Undeclared units are the loaded ones
// whose unit file an administrator installed in one of AdminDirs (for
// systemd /etc/systemd/system), so the init system's own units are not
// reported as undeclared. With Users set, user-scope declarations are read
// from the manager of the user they belong to: the systemd user manager
// of the target's ssh.user, or its launchd gui/<uid> domain.
type UnitsObserver struct {
	Manager   units.Manager
	AdminDirs []string
	// Users opens user managers; nil reads every unit through Manager.
	Users UserManagers
}

var _ ServiceObserver = (*UnitsObserver)(nil)

// observeUnits is the runner's one read of the pass's units: through
// ObserveServices when the observer has it (its refusals join the
// beacon's), else Observe of all, the declared units then undeclared.
func (r *Runner) observeUnits(ctx context.Context, p *Pass, all, undeclared []string) ([]UnitReport, error) {
	so, ok := r.Observer.(ServiceObserver)
	if !ok || p.Target == nil {
		return r.Observer.Observe(ctx, all)
	}
	reps, refs, err := so.ObserveServices(ctx, p.Target, undeclared)
	p.Beacon.Refusals = append(p.Beacon.Refusals, refs...)
	return reps, err
}

// lastLine is the last log line of a declared service, from its own
// manager when the observer tells scopes apart.
func (r *Runner) lastLine(ctx context.Context, t *registry.Target, s registry.Service) (string, error) {
	if so, ok := r.Observer.(ServiceObserver); ok && t != nil {
		return so.ServiceLastLine(ctx, t, s)
	}
	return r.Observer.LastLine(ctx, s.Unit)
}

// ObserveServices implements ServiceObserver: one batched read of the
// system units and the undeclared ones, and one per user of the user-scope
// units. A user manager that fails a read is forgotten and asked once
// more on a fresh connection before its units read unobserved.
func (o *UnitsObserver) ObserveServices(ctx context.Context, t *registry.Target, undeclared []string) ([]UnitReport, []Refusal, error) {
	out := make([]UnitReport, len(t.Services)+len(undeclared))
	var sysIdx []int
	var sysNames []string
	byUser := map[string][]int{}
	var users []string
	for i, s := range t.Services {
		if o.Users != nil && s.EffectiveScope() == registry.ScopeUser {
			u := units.ScopeOwner(*t)
			if _, ok := byUser[u]; !ok {
				users = append(users, u)
			}
			byUser[u] = append(byUser[u], i)
			continue
		}
		sysIdx = append(sysIdx, i)
		sysNames = append(sysNames, s.Unit)
	}
	for i, u := range undeclared {
		sysIdx = append(sysIdx, len(t.Services)+i)
		sysNames = append(sysNames, u)
	}
	if len(sysNames) > 0 {
		reps, err := o.Observe(ctx, sysNames)
		if err != nil {
			return nil, nil, err
		}
		for k, i := range sysIdx {
			out[i] = reps[k]
		}
	}
	var refs []Refusal
	for _, u := range users {
		idx := byUser[u]
		names := make([]string, len(idx))
		for k, i := range idx {
			names[k] = t.Services[i].Unit
		}
		vs, err := o.userShow(ctx, u, names)
		if err != nil {
			code := string(refusal.UserManagerDown)
			if c, ok := refusal.CodeOf(err); !ok || c != refusal.UserManagerDown {
				code = "units_unreadable"
			}
			refs = append(refs, Refusal{Code: code, Subject: "user " + u, Message: err.Error()})
			for k, i := range idx {
				out[i] = UnitReport{Unit: names[k], State: StateUnobserved, Sentence: err.Error()}
			}
			continue
		}
		for k, i := range idx {
			out[i] = reportFromVerdict(vs[k])
		}
	}
	return out, refs, nil
}

// userShow reads units of user's manager, once more on a fresh connection
// when the kept one fails (the manager restarted since).
func (o *UnitsObserver) userShow(ctx context.Context, user string, names []string) ([]units.Verdict, error) {
	var err error
	for try := 0; try < 2; try++ {
		var m units.Manager
		m, err = o.Users.Manager(ctx, user)
		if err != nil {
			return nil, err
		}
		var vs []units.Verdict
		vs, err = m.ShowMany(ctx, names)
		if err == nil {
			return vs, nil
		}
		o.Users.Forget(user)
		var down *units.UserManagerDownError
		if errors.As(err, &down) || ctx.Err() != nil {
			break
		}
	}
	return nil, err
}

// ServiceLastLine implements ServiceObserver.
func (o *UnitsObserver) ServiceLastLine(ctx context.Context, t *registry.Target, s registry.Service) (string, error) {
	m := o.Manager
	if o.Users != nil && s.EffectiveScope() == registry.ScopeUser {
		um, err := o.Users.Manager(ctx, units.ScopeOwner(*t))
		if err != nil {
			return "", err
		}
		m = um
	}
	lines, err := m.Logs(ctx, s.Unit, 1)
	if err != nil || len(lines) == 0 {
		return "", err
	}
	return logMessage(lines[len(lines)-1]), nil
}

// Observe reads every unit with the manager's batched query.
func (o *UnitsObserver) Observe(ctx context.Context, names []string) ([]UnitReport, error) {
	vs, err := o.Manager.ShowMany(ctx, names)
	if err != nil {
		return nil, err
	}
	out := make([]UnitReport, len(vs))
	for i, v := range vs {
		out[i] = reportFromVerdict(v)
	}
	return out, nil
}

func reportFromVerdict(v units.Verdict) UnitReport {
	r := UnitReport{Unit: v.Unit, State: v.State, PID: v.PID, Starts: v.Starts, Sentence: v.Sentence, Sub: v.Detail}
	if v.State == StateFailed || v.State == StateFailing || v.LastExit != 0 {
		code := v.LastExit
		r.LastExit = &code
	}
	return r
}

// Loaded lists the loaded units installed in the admin directories,
// leaving out those in except. It reads the directories first and asks the
// init system of the units installed there only (units.LoadedAmong), none when
// every one is in except; with no admin directories it lists every
// loaded unit.
func (o *UnitsObserver) Loaded(ctx context.Context, except map[string]bool) ([]string, error) {
	if len(o.AdminDirs) == 0 {
		return o.Manager.ListLoaded(ctx)
	}
	var installed []string
	seen := map[string]bool{}
	for _, dir := range o.AdminDirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if e.IsDir() {
				continue
			}
			if target, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && target == "/dev/null" {
				continue // a mask, not an installed unit
			}
			// a launchd job is named by its plist's name without .plist
			for _, n := range []string{e.Name(), strings.TrimSuffix(e.Name(), ".plist")} {
				if !except[n] && !seen[n] {
					seen[n] = true
					installed = append(installed, n)
				}
			}
		}
	}
	if len(installed) == 0 {
		return nil, nil
	}
	return units.LoadedAmong(ctx, o.Manager, installed)
}

// LastLine returns the message of the unit's last log line.
func (o *UnitsObserver) LastLine(ctx context.Context, unit string) (string, error) {
	lines, err := o.Manager.Logs(ctx, unit, 1)
	if err != nil || len(lines) == 0 {
		return "", err
	}
	return logMessage(lines[len(lines)-1]), nil
}

// logMessage drops a journal short-iso prefix ("TIME HOST UNIT[PID]: ").
func logMessage(line string) string {
	if i := strings.Index(line, "]: "); i >= 0 {
		return line[i+3:]
	}
	return line
}
