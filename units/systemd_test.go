package units

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wisent/stado/declaration"
	"github.com/wisent/stado/safefile"
)

// The tests and benchmarks in this file need a real systemd system manager
// on D-Bus. This machine has none; a testbed host has one, and
// tests/units_journey_test.go builds this package's test binary and runs
// them inside a host with STADO_SYSTEMD=required, where they cannot skip
// (and the journey cannot skip under STADO_TESTBED=required). Anywhere else
// without a manager they skip with a line saying where they run.

// systemdGateEnv set to "required" says a real systemd manager must be
// reachable here, so a test that finds none fails instead of skipping.
const systemdGateEnv = "STADO_SYSTEMD"

// connectSystemd returns a Manager on a real systemd system manager, as
// inside a testbed host, or ends the test when there is none: a failure
// under STADO_SYSTEMD=required, else a skip.
func connectSystemd(t testing.TB) *Systemd {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m, err := NewSystemd(ctx, declaration.ScopeSystem, os.Getenv("HOME"), nil)
	if err != nil {
		if os.Getenv(systemdGateEnv) == "required" {
			t.Fatalf("%s=required but no systemd manager answers on D-Bus: %v", systemdGateEnv, err)
		}
		t.Skipf("no systemd manager on D-Bus here (%v); the units journey in tests/ runs this inside a testbed host", err)
	}
	t.Cleanup(m.Close)
	return m
}

// waitFor polls Show until cond holds or the deadline passes, and returns
// the last verdict read.
func waitFor(t *testing.T, m *Systemd, unit string, within time.Duration, cond func(Verdict) bool) Verdict {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		v, err := m.Show(context.Background(), unit)
		if err != nil {
			t.Fatal(err)
		}
		if cond(v) || time.Now().After(deadline) {
			return v
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// installStarted renders s, installs it (expecting a fresh install), starts
// it, and removes it when t ends.
func installStarted(t *testing.T, m *Systemd, s declaration.Service, edit func(string) string) []byte {
	t.Helper()
	ctx := context.Background()
	t.Cleanup(func() { _ = m.Remove(context.Background(), s) })
	content, err := RenderSystemd(s)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		content = []byte(edit(string(content)))
	}
	if res, err := m.Install(ctx, s, content); err != nil || res.Action != ActionInstalled {
		t.Fatalf("install %s: %+v %v", s.Unit, res, err)
	}
	if err := m.Start(ctx, s.Unit); err != nil {
		t.Fatalf("start %s: %v", s.Unit, err)
	}
	return content
}

// systemctlShow reads properties of a unit with the real systemctl, the way
// an operator would, as NAME=VALUE pairs.
func systemctlShow(t *testing.T, unit string, names ...string) map[string]string {
	t.Helper()
	out, err := ExecRunner{}.Run(context.Background(), []string{"systemctl", "show", "-p", strings.Join(names, ","), unit})
	if err != nil {
		t.Fatal(err)
	}
	props := map[string]string{}
	for _, l := range splitLines(out) {
		if k, v, ok := strings.Cut(l, "="); ok {
			props[k] = v
		}
	}
	return props
}

func TestSystemdSaysItsConnectionStandsUntilItIsClosed(t *testing.T) {
	m := connectSystemd(t)
	if !m.Connected() {
		t.Fatal("a manager just opened says its connection is down")
	}
	if _, err := m.Show(context.Background(), "stado-test-none.service"); err != nil {
		t.Fatal(err)
	}
	if !m.Connected() {
		t.Fatal("a manager that just answered says its connection is down")
	}
	m.Close()
	if m.Connected() {
		t.Error("a closed manager says its connection stands")
	}
}

func TestSystemdLifecycleOnARealManager(t *testing.T) {
	m := connectSystemd(t)
	ctx := context.Background()
	healthy := declaration.Service{Name: "stado-test-healthy", Unit: "stado-test-healthy.service", Program: "/bin/sh",
		Args: []string{"-c", "for i in 1 2 3 4 5; do echo line$i; done; exec sleep 300"}}
	crashy := declaration.Service{Name: "stado-test-crashy", Unit: "stado-test-crashy.service", Program: "/bin/sh",
		Args: []string{"-c", "echo crashing; exit 3"}}
	installStarted(t, m, healthy, nil)
	installStarted(t, m, crashy, nil)

	// Restart=always keeps starting the program that exits 3: failing, not running.
	v := waitFor(t, m, crashy.Unit, 10*time.Second, func(v Verdict) bool { return v.State == StateFailing && v.Starts >= 2 })
	if v.State != StateFailing || v.LastExit != 3 || v.Signaled || v.Starts < 2 || v.PID != 0 ||
		v.Sentence != FailingSentence(crashy.Unit, "3", v.Starts) {
		t.Errorf("crash loop: %+v", v)
	}

	v = waitFor(t, m, healthy.Unit, 5*time.Second, func(v Verdict) bool { return v.State == StateActive && v.PID > 0 })
	if v.State != StateActive || v.PID == 0 {
		t.Errorf("healthy: %+v", v)
	}
	if pid := systemctlShow(t, healthy.Unit, "MainPID")["MainPID"]; pid != fmt.Sprint(v.PID) {
		t.Errorf("healthy pid %d, systemctl says %s", v.PID, pid)
	}
	// Many at once, in the order asked, a unit systemd does not hold among them.
	vs, err := m.ShowMany(ctx, []string{crashy.Unit, "stado-test-none.service", healthy.Unit})
	if err != nil || len(vs) != 3 {
		t.Fatalf("show many: %v %v", vs, err)
	}
	if vs[0].Unit != crashy.Unit || vs[0].Starts < 2 ||
		vs[1].Unit != "stado-test-none.service" || vs[1].State != StateMissing ||
		vs[2].Unit != healthy.Unit || vs[2].State != StateActive || vs[2].PID != v.PID {
		t.Errorf("show many: %+v", vs)
	}

	// The last 3 lines the program printed, oldest first; the journal may
	// take a moment to hold them all.
	var lines []string
	deadline := time.Now().Add(5 * time.Second)
	for {
		var err error
		lines, err = m.Logs(ctx, healthy.Unit, 3)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(lines); (n > 0 && strings.HasSuffix(lines[n-1], ": line5")) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	want := []string{"line3", "line4", "line5"}
	if len(lines) != len(want) {
		t.Errorf("logs: %d lines %q, want %d", len(lines), lines, len(want))
	} else {
		for i, w := range want {
			if !strings.HasSuffix(lines[i], ": "+w) {
				t.Errorf("logs line %d = %q, want the program's %q", i, lines[i], w)
			}
		}
	}

	// Restart runs a new process; ListLoaded names both units.
	if err := m.Restart(ctx, healthy.Unit); err != nil {
		t.Fatal(err)
	}
	if r := waitFor(t, m, healthy.Unit, 5*time.Second, func(r Verdict) bool { return r.State == StateActive && r.PID > 0 }); r.PID == v.PID || r.State != StateActive {
		t.Errorf("after restart: %+v, was pid %d", r, v.PID)
	}
	loaded, err := m.ListLoaded(ctx)
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]bool{}
	for _, n := range loaded {
		held[n] = true
	}
	if !held[healthy.Unit] || !held[crashy.Unit] || !held["ssh.service"] {
		t.Errorf("ListLoaded lacks ours or ssh.service: %v", loaded)
	}

	// A crash loop's journal interleaves systemd's own lines about the unit
	// (exited, scheduled restart, started); Logs gives the program's.
	lines, err = m.Logs(ctx, crashy.Unit, 2)
	if err != nil || len(lines) != 2 || !strings.HasSuffix(lines[0], ": crashing") || !strings.HasSuffix(lines[1], ": crashing") {
		t.Errorf("logs of the crash loop: %q %v, want the program's last 2 lines", lines, err)
	}

	if err := m.Stop(ctx, healthy.Unit); err != nil {
		t.Fatal(err)
	}
	// After a stop the program's lines are still the last it printed.
	if lines, err := m.Logs(ctx, healthy.Unit, 1); err != nil || len(lines) != 1 || !strings.HasSuffix(lines[0], ": line5") {
		t.Errorf("logs after stop: %q %v, want the program's last line", lines, err)
	}
	if v, err := m.Show(ctx, healthy.Unit); err != nil || v.State != StateInactive || v.PID != 0 {
		t.Errorf("after stop: %+v %v", v, err)
	}
	if err := m.Remove(ctx, healthy); err != nil {
		t.Fatal(err)
	}
	if v, err := m.Show(ctx, healthy.Unit); err != nil || v.State != StateMissing {
		t.Errorf("after remove: %+v %v", v, err)
	}
	if _, err := os.Stat(UnitPath(healthy, declaration.OSLinux, "")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("unit file still there after remove: %v", err)
	}
	if err := m.Remove(ctx, healthy); err != nil {
		t.Errorf("removing a missing unit: %v", err)
	}
	if err := m.Remove(ctx, crashy); err != nil {
		t.Fatal(err)
	}
	if v, err := m.Show(ctx, crashy.Unit); err != nil || v.State != StateMissing {
		t.Errorf("crashy after remove: %+v %v", v, err)
	}
}

// systemctlVerdict is the verdict of unit's properties as systemctl shows
// them, and those properties.
func systemctlVerdict(t *testing.T, unit string) (Verdict, map[string]string) {
	t.Helper()
	sc := systemctlShow(t, unit, "LoadState", "ActiveState", "SubState", "MainPID", "NRestarts", "ExecMainCode", "ExecMainStatus", "Result")
	num := func(k string) int64 {
		n, err := strconv.ParseInt(sc[k], 10, 64)
		if err != nil {
			t.Fatalf("systemctl show %s=%q: %v", k, sc[k], err)
		}
		return n
	}
	return VerdictFromSystemd(unit, SystemdProperties{LoadState: sc["LoadState"], ActiveState: sc["ActiveState"], SubState: sc["SubState"],
		MainPID: uint32(num("MainPID")), NRestarts: uint32(num("NRestarts")), ExecMainCode: int32(num("ExecMainCode")),
		ExecMainStatus: int32(num("ExecMainStatus")), Result: sc["Result"]}), sc
}

// agreesWithSystemctl fails t when v is not the verdict systemctl's
// properties of unit give.
func agreesWithSystemctl(t *testing.T, unit string, v Verdict) {
	t.Helper()
	want, sc := systemctlVerdict(t, unit)
	if v != want {
		t.Errorf("ShowMany reads %+v; systemctl's properties (%v) say %+v", v, sc, want)
	}
}

// showCounted reads unit with ShowMany and returns its verdict and the
// property reads the call sent.
func showCounted(t *testing.T, m *Systemd, unit string) (Verdict, int64) {
	t.Helper()
	before := m.gets.Load()
	vs, err := m.ShowMany(context.Background(), []string{unit})
	if err != nil {
		t.Fatal(err)
	}
	return vs[0], m.gets.Load() - before
}

// A running unit is read from two of its properties (ShowMany); its
// verdict must be the one all five give, also after it crashed once and
// its supervisor started it again.
func TestShowManyReadsARestartedRunningUnitAsAllItsPropertiesSay(t *testing.T) {
	m := connectSystemd(t)
	mark := "/run/stado-test-once-" + strconv.Itoa(os.Getpid())
	t.Cleanup(func() { _ = os.Remove(mark) })
	once := declaration.Service{Name: "stado-test-once", Unit: "stado-test-once.service", Program: "/bin/sh",
		Args: []string{"-c", "if [ -e " + mark + " ]; then exec sleep 300; fi; touch " + mark + "; exit 3"}}
	installStarted(t, m, once, nil)
	// the states and the properties are separate reads, so wait until the
	// restarted process runs in both, then read systemctl and stado again
	waitFor(t, m, once.Unit, 15*time.Second, func(v Verdict) bool {
		return v.State == StateActive && v.Starts >= 2 && v.Detail == "active (running)"
	})
	want, sc := systemctlVerdict(t, once.Unit)
	v, err := m.Show(context.Background(), once.Unit)
	if err != nil {
		t.Fatal(err)
	}
	if v != want || v.State != StateActive || v.PID == 0 || v.Starts < 2 {
		t.Errorf("after a crash and a restart ShowMany reads %+v; all its properties (%v) say %+v", v, sc, want)
	}
}

// A unit that runs no process is asked one property (its state-change
// stamp) while its state stands, and read whole again once it moved: its
// verdict is always the one systemctl's properties give.
func TestShowManyAsksASettledUnitOnePropertyUntilItsStateMoves(t *testing.T) {
	m := connectSystemd(t)
	ctx := context.Background()
	s := declaration.Service{Name: "stado-test-settled", Unit: "stado-test-settled.service", Program: "/bin/sh",
		Args: []string{"-c", "exit 3"}}
	t.Cleanup(func() { _ = m.Remove(context.Background(), s) })
	content, err := RenderSystemd(s)
	if err != nil {
		t.Fatal(err)
	}
	content = []byte(strings.Replace(string(content), "Restart=always", "Restart=no", 1))
	if _, err := m.Install(ctx, s, content); err != nil {
		t.Fatal(err)
	}
	agrees := func(v Verdict) { t.Helper(); agreesWithSystemctl(t, s.Unit, v) }
	show := func() (Verdict, int64) { t.Helper(); return showCounted(t, m, s.Unit) }

	// never started: inactive (dead)
	v, n := show()
	if v.State != StateInactive || n != int64(1+len(serviceProps)) {
		t.Errorf("first read of a settled unit: %+v in %d reads, want inactive in %d", v, n, 1+len(serviceProps))
	}
	agrees(v)
	if v, n = show(); v.State != StateInactive || n != 1 {
		t.Errorf("second read, nothing moved: %+v in %d reads, want inactive in 1", v, n)
	}

	// run once: it exits 3 and stays failed; the stamp moved
	if err := m.Start(ctx, s.Unit); err != nil {
		t.Logf("start: %v", err)
	}
	v = waitFor(t, m, s.Unit, 10*time.Second, func(v Verdict) bool { return v.State == StateFailed })
	if v.LastExit != 3 {
		t.Errorf("after its run: %+v, want failed with last exit 3", v)
	}
	agrees(v)
	if v2, n := show(); v2 != v || n != 1 {
		t.Errorf("read again, nothing moved: %+v in %d reads, want %+v in 1", v2, n, v)
	}

	// a unit not asked of for settledKept calls is forgotten
	for range settledKept + 1 {
		if _, err := m.ShowMany(ctx, []string{"stado-test-none.service"}); err != nil {
			t.Fatal(err)
		}
	}
	m.mu.Lock()
	_, kept := m.settled[s.Unit]
	m.mu.Unlock()
	if kept {
		t.Errorf("%s is still kept after %d calls that did not ask of it", s.Unit, settledKept+1)
	}
}

// A running unit is asked its main pid each call; its restart count is
// read again only when that pid moved (systemd counts a restart only when
// it starts a new main process) or when the kept count is runningKept
// calls old. Its verdict is always the one systemctl's properties give.
func TestShowManyAsksARunningUnitItsRestartsOnlyWhenItsMainPIDMoves(t *testing.T) {
	m := connectSystemd(t)
	s := declaration.Service{Name: "stado-test-running", Unit: "stado-test-running.service", Program: "/bin/sleep", Args: []string{"300"}}
	installStarted(t, m, s, nil)
	agrees := func(v Verdict) { t.Helper(); agreesWithSystemctl(t, s.Unit, v) }
	show := func() (Verdict, int64) { t.Helper(); return showCounted(t, m, s.Unit) }
	first := waitFor(t, m, s.Unit, 10*time.Second, func(v Verdict) bool { return v.Detail == "active (running)" && v.PID != 0 })
	agrees(first)
	if v, n := show(); v != first || n != 1 {
		t.Errorf("read again, nothing moved: %+v in %d reads, want %+v in 1", v, n, first)
	}

	// its process killed: systemd starts it again (RestartSec 2), a new
	// pid and one restart more, and both are read
	proc, err := os.FindProcess(first.PID)
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Kill(); err != nil {
		t.Fatal(err)
	}
	v := waitFor(t, m, s.Unit, 15*time.Second, func(v Verdict) bool {
		return v.Detail == "active (running)" && v.PID != 0 && v.PID != first.PID
	})
	if v.Starts != first.Starts+1 {
		t.Errorf("after its process was killed and started again: %+v, want %d starts", v, first.Starts+1)
	}
	agrees(v)
	if v2, n := show(); v2 != v || n != 1 {
		t.Errorf("read again after the restart, nothing moved: %+v in %d reads, want %+v in 1", v2, n, v)
	}

	// a kept restart count is read again once it is runningKept calls old
	var most int64
	for range runningKept + 1 {
		_, n := show()
		most = max(most, n)
	}
	if most != 1+1 {
		t.Errorf("over %d calls the most reads in one was %d, want 2 (the kept count read again)", runningKept+1, most)
	}
}

func TestSystemdStartRestartsAUnitThatHitItsStartLimitOnARealManager(t *testing.T) {
	m := connectSystemd(t)
	ctx := context.Background()
	// The program fails until the flag file exists, then stays up.
	flag := filepath.Join("/run", "stado-test-limited.ok")
	_ = os.Remove(flag)
	t.Cleanup(func() { _ = os.Remove(flag) })
	limited := declaration.Service{Name: "stado-test-limited", Unit: "stado-test-limited.service", Program: "/bin/sh",
		Args: []string{"-c", "test -e " + flag + " && exec sleep 300; exit 3"}}
	// Put systemd's default start limit back (stado renders none) and
	// restart quickly, so the crash loop runs into it.
	installStarted(t, m, limited, func(c string) string {
		c = strings.Replace(c, "StartLimitIntervalSec=0\n", "", 1)
		return strings.Replace(c, "RestartSec=2\n", "RestartSec=100ms\n", 1)
	})
	// Under Restart=always only the start limit leaves the unit failed;
	// systemd keeps the first failure's Result (exit-code) then, so the
	// state is what tells.
	deadline := time.Now().Add(10 * time.Second)
	for systemctlShow(t, limited.Unit, "ActiveState")["ActiveState"] != "failed" {
		if time.Now().After(deadline) {
			t.Fatalf("the crash loop never hit the start limit: %v", systemctlShow(t, limited.Unit, "ActiveState", "SubState", "Result", "NRestarts"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	v, err := m.Show(ctx, limited.Unit)
	if err != nil || v.State != StateFailing || v.LastExit != 3 || v.Starts < 2 {
		t.Errorf("stopped by its start limit: %+v %v, want failing with exit 3", v, err)
	}
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// A plain start job is refused while the limit holds...
	var je *JobError
	if err := m.job(ctx, "start", limited.Unit, m.conn.StartUnitContext); !errors.As(err, &je) || je.Result != "failed" {
		t.Errorf("a start without reset-failed after the start limit: %v, want the job to fail", err)
	}
	// ...and Start clears it first.
	if err := m.Start(ctx, limited.Unit); err != nil {
		t.Fatalf("start after the start limit: %v", err)
	}
	v = waitFor(t, m, limited.Unit, 5*time.Second, func(v Verdict) bool { return v.State == StateActive && v.PID > 0 })
	if v.State != StateActive || v.PID == 0 {
		t.Errorf("limited unit after Start: %+v", v)
	}
}

func TestSystemdInstallOfTheSameBytesTwiceChangesNothingOnARealManager(t *testing.T) {
	m := connectSystemd(t)
	ctx := context.Background()
	// A running unit whose file changes on disk shows NeedDaemonReload=yes
	// until systemd reloads: the witness of any daemon-reload.
	witness := declaration.Service{Name: "stado-test-witness", Unit: "stado-test-witness.service", Program: "/bin/sleep", Args: []string{"300"}}
	installStarted(t, m, witness, nil)
	touchWitness := func(arg string) {
		t.Helper()
		w := witness
		w.Args = []string{arg}
		c, err := RenderSystemd(w)
		if err != nil {
			t.Fatal(err)
		}
		if err := safefile.Write(UnitPath(w, declaration.OSLinux, ""), c, 0o644); err != nil {
			t.Fatal(err)
		}
		if got := systemctlShow(t, witness.Unit, "NeedDaemonReload")["NeedDaemonReload"]; got != "yes" {
			t.Fatalf("witness NeedDaemonReload=%q after its file changed, want yes", got)
		}
	}
	touchWitness("301")

	s := declaration.Service{Name: "stado-test-idem", Unit: "stado-test-idem.service", Program: "/bin/sleep", Args: []string{"300"}}
	content := installStarted(t, m, s, nil)
	v := waitFor(t, m, s.Unit, 5*time.Second, func(v Verdict) bool { return v.State == StateActive && v.PID > 0 })
	if v.State != StateActive {
		t.Fatalf("idem unit: %+v", v)
	}
	// A unit file new to its directory is loaded on first reference: the
	// first install started it without reloading systemd.
	if got := systemctlShow(t, witness.Unit, "NeedDaemonReload")["NeedDaemonReload"]; got != "yes" {
		t.Errorf("witness NeedDaemonReload=%q after installing a new unit, want yes (no reload)", got)
	}
	touchWitness("302")
	before := systemctlShow(t, s.Unit, "MainPID", "NRestarts", "InvocationID")

	res, err := m.Install(ctx, s, content)
	if err != nil || res.Action != ActionUnchanged || res.Path != "/etc/systemd/system/"+s.Unit {
		t.Fatalf("second install: %+v %v, want unchanged", res, err)
	}
	if got := systemctlShow(t, witness.Unit, "NeedDaemonReload")["NeedDaemonReload"]; got != "yes" {
		t.Errorf("an unchanged install reloaded systemd (witness NeedDaemonReload=%q)", got)
	}
	if after := systemctlShow(t, s.Unit, "MainPID", "NRestarts", "InvocationID"); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("an unchanged install touched the unit: before %v, after %v", before, after)
	}

	// Other bytes: updated, and systemd reloads.
	s2 := s
	s2.Args = []string{"303"}
	other, err := RenderSystemd(s2)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := m.Install(ctx, s2, other); err != nil || res.Action != ActionUpdated {
		t.Fatalf("install of other bytes: %+v %v, want updated", res, err)
	}
	if got := systemctlShow(t, witness.Unit, "NeedDaemonReload")["NeedDaemonReload"]; got != "no" {
		t.Errorf("an updating install did not reload systemd (witness NeedDaemonReload=%q)", got)
	}
}

// benchUnitCount is how many units the Show benchmarks read.
const benchUnitCount = 50

// benchUnits installs benchUnitCount running units of the benchmark's own
// (written at once, one daemon-reload, started) and removes them when b's
// run ends.
func benchUnits(b *testing.B, m *Systemd) []string {
	b.Helper()
	ctx := context.Background()
	names := make([]string, benchUnitCount)
	svcs := make([]declaration.Service, benchUnitCount)
	for i := range names {
		s := declaration.Service{Name: fmt.Sprintf("stado-bench-%02d", i), Program: "/bin/sleep", Args: []string{"infinity"}}
		s.Unit = s.Name + ".service"
		content, err := RenderSystemd(s)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := writeIfChanged(UnitPath(s, declaration.OSLinux, ""), content, 0o644); err != nil {
			b.Fatal(err)
		}
		names[i], svcs[i] = s.Unit, s
	}
	b.Cleanup(func() {
		var wg sync.WaitGroup
		for _, n := range names {
			wg.Add(1)
			go func() { defer wg.Done(); _ = m.Stop(context.Background(), n) }()
		}
		wg.Wait()
		for _, s := range svcs {
			_ = os.Remove(UnitPath(s, declaration.OSLinux, ""))
		}
		_ = m.conn.ReloadContext(context.Background())
		for _, n := range names {
			_ = m.conn.ResetFailedUnitContext(context.Background(), n)
		}
	})
	if err := m.conn.ReloadContext(ctx); err != nil {
		b.Fatal(err)
	}
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = m.Start(ctx, n) }()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
	return names
}

func BenchmarkSystemdShowMany50(b *testing.B) {
	m := connectSystemd(b)
	names := benchUnits(b, m)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		vs, err := m.ShowMany(ctx, names)
		if err != nil {
			b.Fatal(err)
		}
		if vs[len(vs)-1].State != StateActive {
			b.Fatalf("bench unit not active: %+v", vs[len(vs)-1])
		}
	}
}

func BenchmarkSystemctlShow50Forks(b *testing.B) {
	m := connectSystemd(b)
	names := benchUnits(b, m)
	ctx := context.Background()
	r := ExecRunner{}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, n := range names {
			if _, err := r.Run(ctx, []string{"systemctl", "show", "-p", "LoadState,ActiveState,SubState,MainPID,ExecMainStatus,ExecMainCode,NRestarts,Result", n}); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// Asking which of some units systemd holds gives what the whole listing
// gives for them: the loaded ones among them, not the names it does not
// hold, an alias or a unit of another type, and nothing for no names.
func TestListLoadedAmongNamesWhatTheWholeListingNamesOfThoseAsked(t *testing.T) {
	m := connectSystemd(t)
	ctx := context.Background()
	s := declaration.Service{Name: "stado-test-among", Unit: "stado-test-among.service", Program: "/bin/sleep", Args: []string{"300"}}
	installStarted(t, m, s, nil)
	all, err := m.ListLoaded(ctx)
	if err != nil {
		t.Fatal(err)
	}
	loaded := map[string]bool{}
	for _, u := range all {
		loaded[u] = true
	}
	if !loaded[s.Unit] {
		t.Fatalf("the whole listing leaves out the running %s: %v", s.Unit, all)
	}
	names := append(append([]string(nil), all[:len(all)/2]...), s.Unit, s.Unit, "stado-test-none.service",
		`stado-test-a\x2db.service`, "stado-test-[ab].service", "sshd.service", "dbus.socket", "basic.target")
	var want []string
	seen := map[string]bool{}
	for _, n := range names {
		if loaded[n] && !seen[n] {
			want = append(want, n)
		}
		seen[n] = true
	}
	got, err := m.ListLoadedAmong(ctx, names)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("ListLoadedAmong = %v\nwant %v", got, want)
	}
	if got, err := m.ListLoadedAmong(ctx, nil); err != nil || len(got) != 0 {
		t.Errorf("ListLoadedAmong of no names = %v, %v; want none", got, err)
	}
}
