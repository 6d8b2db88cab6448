package units

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	sdbus "github.com/coreos/go-systemd/v22/dbus"

	"github.com/wisent/stado/declaration"
)

// Systemd is the Manager for systemd, over its D-Bus API (system manager or
// the user manager of the calling user). Logs come from journalctl through
// Runner.
type Systemd struct {
	conn  *sdbus.Conn
	scope string
	home  string
	// account is the user whose manager this is (scope "user"); nil for
	// the system manager.
	account  *Account
	runner   Runner
	inFlight chan struct{} // one token per property read outstanding on conn

	// settled keeps, per unit, the Service properties read while it ran
	// no process (inactive, failed, or active with its process gone), with
	// the unit's StateChangeTimestampMonotonic then. systemd moves that
	// stamp on every change of the unit's state, and none of the five
	// properties changes while the unit runs nothing, so while the stamp
	// stands the kept values are the unit's: a later ShowMany asks one
	// property of such a unit instead of five.
	mu      sync.Mutex
	settled map[string]settledUnit
	// running keeps, per running unit, its main pid and the restart count
	// read with it: systemd counts a restart only when it starts a new
	// main process, so while a later call reads the same pid the count
	// stands, and ShowMany asks one property of the unit instead of two.
	running map[string]runningUnit
	calls   uint64 // ShowMany calls, which date the kept entries
	// gets counts the property reads sent (tests count them).
	gets atomic.Int64
}

// settledUnit is what ShowMany kept of a unit with no process.
type settledUnit struct {
	active, sub string
	stamp       uint64
	values      [len(serviceProps)]any
	used        uint64 // the call that last read or kept it
}

// settledKept bounds how many ShowMany calls an entry of either kept map
// (settled and running) outlives unused, so a host whose transient units
// come and go does not grow them forever.
const settledKept = 64

// runningUnit is what ShowMany kept of a running unit.
type runningUnit struct {
	pid, restarts uint32
	read          uint64 // the call that read restarts
	used          uint64 // the call that last read or kept it
}

// runningKept is how many calls a kept restart count is trusted for before
// it is read again, even while the main pid stands: a pid the kernel hands
// out again to the restarted process (it would have to wrap its whole pid
// space between two calls) cannot keep a stale count for longer.
const runningKept = 64

// settledState says a unit's states mean it runs no process and none of
// its Service properties can change until its state does.
func settledState(active, sub string) bool {
	return (active == "inactive" && sub == "dead") || (active == "failed" && sub == "failed") || (active == "active" && sub == "exited")
}

var _ Manager = (*Systemd)(nil)

// NewSystemd connects to the system manager (scope "system") or the calling
// user's manager (scope "user", over the manager's private socket: see
// NewUserSystemd); home places user unit files. Close it when done: the
// connection outlives ctx, which only has to be live when NewSystemd is
// called.
func NewSystemd(ctx context.Context, scope, home string, r Runner) (*Systemd, error) {
	if scope == declaration.ScopeUser {
		return NewUserSystemd(ctx, currentAccount(home), r)
	}
	scope = declaration.ScopeSystem
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("connect to the systemd %s manager: %w", scope, err)
	}
	// godbus closes a connection when the context it was dialled with ends;
	// a Manager lives until Close, so the dial gets ctx without its end.
	live := context.WithoutCancel(ctx)
	conn, err := sdbus.NewSystemConnectionContext(live)
	if err != nil {
		return nil, fmt.Errorf("connect to the systemd %s manager: %w", scope, err)
	}
	if r == nil {
		r = ExecRunner{}
	}
	return &Systemd{conn: conn, scope: scope, home: home, runner: r, inFlight: make(chan struct{}, propsInFlight)}, nil
}

// Close closes the D-Bus connection.
func (m *Systemd) Close() { m.conn.Close() }

// Connected says whether the D-Bus connection still stands: false after
// Close, or once the bus closed it (the bus restarted), when only a new
// Systemd reaches the manager again.
func (m *Systemd) Connected() bool { return m.conn.Connected() }

// Install writes the unit file atomically; only when its bytes changed does
// it reload systemd and enable the unit (for its WantedBy target).
func (m *Systemd) Install(ctx context.Context, s declaration.Service, content []byte) (InstallResult, error) {
	if s.Scope == "" {
		s.Scope = m.scope
	}
	path := UnitPath(s, declaration.OSLinux, m.home)
	action, err := writeIfChanged(path, content, 0o644)
	if err != nil {
		return InstallResult{}, fmt.Errorf("install %s: %w", s.Unit, err)
	}
	res := InstallResult{Action: action, Path: path}
	if action == ActionUnchanged {
		return res, nil
	}
	if action == ActionUpdated || !m.loadedFrom(ctx, s.Unit, path) {
		if err := m.conn.ReloadContext(ctx); err != nil {
			return res, fmt.Errorf("install %s: daemon-reload: %w", s.Unit, err)
		}
	}
	if _, _, err := m.conn.EnableUnitFilesContext(ctx, []string{s.Unit}, false, true); err != nil {
		return res, fmt.Errorf("install %s: enable: %w", s.Unit, err)
	}
	return res, nil
}

// loadedFrom reports whether systemd, asked for unit now, loads it from
// path as it is on disk. A unit file new to its directories needs no
// daemon-reload on a systemd that keeps a unit-path cache (247 and later
// load it on first reference, even after a lookup that found nothing);
// anything else — an older systemd, the unit loaded from another file, a
// reload pending — gets one. A reload makes every manager on a host re-read
// all its units, the most expensive step of installing a new unit.
func (m *Systemd) loadedFrom(ctx context.Context, unit, path string) bool {
	sts, err := m.conn.ListUnitsByNamesContext(ctx, []string{unit})
	if err != nil || len(sts) != 1 || sts[0].LoadState != "loaded" {
		return false
	}
	frag, err := m.conn.GetUnitPropertyContext(ctx, unit, "FragmentPath")
	if err != nil || frag.Value.Value() != path {
		return false
	}
	stale, err := m.conn.GetUnitPropertyContext(ctx, unit, "NeedDaemonReload")
	return err == nil && stale.Value.Value() == false
}

// Remove stops and disables the unit, deletes its file and reloads.
func (m *Systemd) Remove(ctx context.Context, s declaration.Service) error {
	if s.Scope == "" {
		s.Scope = m.scope
	}
	v, err := m.Show(ctx, s.Unit)
	if err != nil {
		return err
	}
	if v.State != StateMissing {
		if err := m.Stop(ctx, s.Unit); err != nil {
			return err
		}
		if _, err := m.conn.DisableUnitFilesContext(ctx, []string{s.Unit}, false); err != nil {
			return fmt.Errorf("remove %s: disable: %w", s.Unit, err)
		}
	}
	path := UnitPath(s, declaration.OSLinux, m.home)
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	if err := m.conn.ReloadContext(ctx); err != nil {
		return fmt.Errorf("remove %s: daemon-reload: %w", s.Unit, err)
	}
	_ = m.conn.ResetFailedUnitContext(ctx, s.Unit)
	return nil
}

type jobFunc func(ctx context.Context, name, mode string, ch chan<- string) (int, error)

// job runs a start/stop/restart job and waits for its result.
func (m *Systemd) job(ctx context.Context, op, unit string, f jobFunc) error {
	ch := make(chan string, 1)
	if _, err := f(ctx, unit, "replace", ch); err != nil {
		return fmt.Errorf("%s %s: %w", op, unit, err)
	}
	select {
	case res := <-ch:
		if res != "done" {
			return &JobError{Unit: unit, Op: op, Result: res}
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s %s: %w", op, unit, ctx.Err())
	}
}

// resetFailed clears a failed or start-limited state, so a start is not
// refused; a unit with nothing to reset is fine.
func (m *Systemd) resetFailed(ctx context.Context, unit string) {
	_ = m.conn.ResetFailedUnitContext(ctx, unit)
}

// Start resets a failed state, starts the unit and waits for the job.
func (m *Systemd) Start(ctx context.Context, unit string) error {
	m.resetFailed(ctx, unit)
	return m.job(ctx, "start", unit, m.conn.StartUnitContext)
}

// Stop stops the unit and waits for the job.
func (m *Systemd) Stop(ctx context.Context, unit string) error {
	return m.job(ctx, "stop", unit, m.conn.StopUnitContext)
}

// Restart resets a failed state, restarts the unit and waits for the job.
func (m *Systemd) Restart(ctx context.Context, unit string) error {
	m.resetFailed(ctx, unit)
	return m.job(ctx, "restart", unit, m.conn.RestartUnitContext)
}

// Show reads one unit's verdict.
func (m *Systemd) Show(ctx context.Context, unit string) (Verdict, error) {
	vs, err := m.ShowMany(ctx, []string{unit})
	if err != nil {
		return Verdict{}, err
	}
	return vs[0], nil
}

// propsInFlight bounds the property reads one Manager has outstanding on its
// connection at once, across all its callers: the system bus refuses more
// than 128 pending replies per connection (dbus-daemon's default
// max_replies_per_connection).
const propsInFlight = 64

// serviceProps are the Service properties a verdict needs beyond the states
// ListUnitsByNames returns, in the order ShowMany reads them.
var serviceProps = [...]string{"MainPID", "NRestarts", "ExecMainCode", "ExecMainStatus", "Result"}

// runningProps is how many of serviceProps a running unit needs: its main
// process and its restarts. systemd clears a main process's exit status
// when it starts one, and a service's result on each start, so while the
// process runs ExecMainCode, ExecMainStatus and Result say nothing a
// verdict uses.
const runningProps = 2

// ShowMany reads the load and active states of every unit in one
// ListUnitsByNames call, then the Service properties a verdict needs of
// each loaded service, one Get each, all in flight at once up to
// propsInFlight: MainPID of a running one, and its NRestarts when the pid
// is not the one kept with a count (see Systemd.running), the rest too
// when it reads no main pid; of one that runs no process, its state-change
// stamp first, and the five only when the stamp moved since they were
// kept (see Systemd.settled); all five (MainPID, NRestarts, ExecMainCode,
// ExecMainStatus, Result) of any other. One GetAll per unit would be
// fewer calls, but systemd answers it with every Service property
// (hundreds, with the command lines and cgroup settings): measured on a
// testbed host, 50 units took about 26 ms that way against about 12 ms
// with five Gets each. On a host whose units run or stay settled, a pass
// asks one property of each unit.
func (m *Systemd) ShowMany(ctx context.Context, units []string) ([]Verdict, error) {
	if len(units) == 0 {
		return nil, nil
	}
	statuses, err := m.conn.ListUnitsByNamesContext(ctx, units)
	if err != nil {
		return nil, fmt.Errorf("read units: %w", err)
	}
	byName := make(map[string]sdbus.UnitStatus, len(statuses))
	for _, st := range statuses {
		byName[st.Name] = st
	}
	props := make([]SystemdProperties, len(units))
	values := make([][len(serviceProps)]any, len(units))
	stamps := make([]uint64, len(units))
	stamped := make([]bool, len(units)) // the stamp was read (0 is a unit that never changed state)
	errs := make([]error, len(units)*len(serviceProps))
	var wg sync.WaitGroup
	// read runs one Get (of the Unit or the Service interface) in flight;
	// store keeps its value.
	read := func(u string, get func(context.Context, string, string) (*sdbus.Property, error), name string, store func(any), errAt int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case m.inFlight <- struct{}{}:
			case <-ctx.Done():
				if errAt >= 0 {
					errs[errAt] = fmt.Errorf("read %s: %w", u, ctx.Err())
				}
				return
			}
			defer func() { <-m.inFlight }()
			m.gets.Add(1)
			p, err := get(ctx, u, name)
			if err != nil {
				if errAt >= 0 {
					errs[errAt] = fmt.Errorf("read %s %s: %w", u, name, err)
				}
				return
			}
			store(p.Value.Value())
		}()
	}
	get := func(i, from, to int) {
		for j := from; j < to; j++ {
			read(units[i], m.conn.GetServicePropertyContext, serviceProps[j], func(v any) { values[i][j] = v }, i*len(serviceProps)+j)
		}
	}
	var running, settled []int
	for i, u := range units {
		st := byName[u]
		props[i] = SystemdProperties{LoadState: st.LoadState, ActiveState: st.ActiveState, SubState: st.SubState}
		if st.LoadState != "loaded" || !strings.HasSuffix(u, ".service") {
			continue
		}
		switch {
		case st.ActiveState == "active" && st.SubState == "running":
			running = append(running, i)
			get(i, 0, 1)
		case settledState(st.ActiveState, st.SubState):
			// a stamp that cannot be read leaves stamped false: the five are read
			settled = append(settled, i)
			read(u, m.conn.GetUnitPropertyContext, "StateChangeTimestampMonotonic", func(v any) { stamps[i], stamped[i] = v.(uint64) }, -1)
		default:
			get(i, 0, len(serviceProps))
		}
	}
	wg.Wait()
	again := false
	m.mu.Lock()
	m.calls++
	call := m.calls
	var counted []int // running units whose restart count is read this call
	for _, i := range running {
		if errs[i*len(serviceProps)] != nil {
			continue
		}
		pid, _ := values[i][0].(uint32)
		if pid == 0 {
			get(i, 1, len(serviceProps))
			again = true
			continue
		}
		if k, ok := m.running[units[i]]; ok && k.pid == pid && call-k.read < runningKept {
			values[i][1] = k.restarts
			k.used = call
			m.running[units[i]] = k
			continue
		}
		counted = append(counted, i)
		get(i, 1, runningProps)
		again = true
	}
	var fresh []int
	for _, i := range settled {
		k, ok := m.settled[units[i]]
		if ok && stamped[i] && k.stamp == stamps[i] && k.active == props[i].ActiveState && k.sub == props[i].SubState {
			values[i] = k.values
			k.used = call
			m.settled[units[i]] = k
			continue
		}
		fresh = append(fresh, i)
		get(i, 0, len(serviceProps))
		again = true
	}
	m.mu.Unlock()
	if again {
		wg.Wait()
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	m.mu.Lock()
	if m.settled == nil {
		m.settled = map[string]settledUnit{}
		m.running = map[string]runningUnit{}
	}
	for _, i := range fresh {
		if stamped[i] {
			m.settled[units[i]] = settledUnit{active: props[i].ActiveState, sub: props[i].SubState, stamp: stamps[i], values: values[i], used: call}
		}
	}
	for _, i := range counted {
		pid, _ := values[i][0].(uint32)
		if restarts, ok := values[i][1].(uint32); ok {
			m.running[units[i]] = runningUnit{pid: pid, restarts: restarts, read: call, used: call}
		}
	}
	for u, k := range m.settled {
		if call-k.used > settledKept {
			delete(m.settled, u)
		}
	}
	for u, k := range m.running {
		if call-k.used > settledKept {
			delete(m.running, u)
		}
	}
	m.mu.Unlock()
	out := make([]Verdict, len(units))
	for i, u := range units {
		p, v := &props[i], values[i]
		p.MainPID, _ = v[0].(uint32)
		p.NRestarts, _ = v[1].(uint32)
		p.ExecMainCode, _ = v[2].(int32)
		p.ExecMainStatus, _ = v[3].(int32)
		p.Result, _ = v[4].(string)
		out[i] = VerdictFromSystemd(u, *p)
	}
	return out, nil
}

// JournalArgv is the journalctl command Logs runs for unit: the entries its
// own processes wrote (_SYSTEMD_UNIT, or _SYSTEMD_USER_UNIT in the user
// journal), not `-u`, which adds systemd's lines about the unit and, on a
// real host, pushes the program's last lines out of a crash loop's tail.
func JournalArgv(scope, unit string, lines int) []string {
	argv := []string{"journalctl", "_SYSTEMD_UNIT=" + unit}
	if scope == declaration.ScopeUser {
		argv = []string{"journalctl", "--user", "_SYSTEMD_USER_UNIT=" + unit}
	}
	return append(argv, "-n", strconv.Itoa(lines), "-o", "short-iso", "--no-pager")
}

// Logs reads the last lines the unit's program printed from the journal.
func (m *Systemd) Logs(ctx context.Context, unit string, lines int) ([]string, error) {
	argv := JournalArgv(m.scope, unit, lines)
	if m.account != nil && m.account.UID != os.Getuid() {
		argv = UserJournalArgv(m.account.UID, unit, lines)
	}
	out, err := m.runner.Run(ctx, argv)
	if err != nil {
		return nil, fmt.Errorf("logs of %s: %w", unit, err)
	}
	ls := splitLines(out)
	if len(ls) == 1 && ls[0] == "-- No entries --" {
		return nil, nil
	}
	return ls, nil
}

// ListLoaded names the loaded service units.
func (m *Systemd) ListLoaded(ctx context.Context) ([]string, error) {
	return m.listLoaded(ctx, []string{"*.service"}, nil)
}

var _ LoadedAmongLister = (*Systemd)(nil)

// ListLoadedAmong implements LoadedAmongLister: one ListUnitsByPatterns
// call whose patterns are the service names asked of, so systemd answers
// with those units only. Like ListLoaded it loads nothing: a unit systemd
// does not hold is left out. A name's glob characters (and the backslash
// of its escapes) become "?" in its pattern, which can only widen the
// match; the answer is kept to the names asked of.
func (m *Systemd) ListLoadedAmong(ctx context.Context, names []string) ([]string, error) {
	asked := make(map[string]bool, len(names))
	patterns := make([]string, 0, len(names))
	for _, n := range names {
		if !strings.HasSuffix(n, ".service") || asked[n] {
			continue
		}
		asked[n] = true
		patterns = append(patterns, strings.Map(func(r rune) rune {
			if strings.ContainsRune(`*?[]\`, r) {
				return '?'
			}
			return r
		}, n))
	}
	if len(patterns) == 0 {
		return nil, nil // no patterns would list every unit
	}
	return m.listLoaded(ctx, patterns, asked)
}

// listLoaded names the loaded units matching patterns, those in keep only
// when keep is not nil.
func (m *Systemd) listLoaded(ctx context.Context, patterns []string, keep map[string]bool) ([]string, error) {
	sts, err := m.conn.ListUnitsByPatternsContext(ctx, nil, patterns)
	if err != nil {
		return nil, fmt.Errorf("list units: %w", err)
	}
	names := make([]string, 0, len(sts))
	for _, st := range sts {
		if st.LoadState == "loaded" && (keep == nil || keep[st.Name]) {
			names = append(names, st.Name)
		}
	}
	return names, nil
}
