package units

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/tests/testbed"
)

// connectSystemd returns a Manager on a real systemd system manager, as
// inside a testbed host, or ends the test through the testbed gate.
func connectSystemd(t *testing.T) *Systemd {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m, err := NewSystemd(ctx, registry.ScopeSystem, os.Getenv("HOME"), nil)
	if err != nil {
		testbed.Unavailable(t, "no systemd manager on D-Bus here: %v", err)
	}
	t.Cleanup(m.Close)
	return m
}

// waitFor polls Show until cond holds or the deadline passes.
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

func TestSystemdLifecycleOnARealManager(t *testing.T) {
	m := connectSystemd(t)
	ctx := context.Background()
	healthy := registry.Service{Name: "stado-test-healthy", Unit: "stado-test-healthy.service", Program: "/bin/sh", Args: []string{"-c", "echo line1; echo line2; exec sleep 300"}}
	crashy := registry.Service{Name: "stado-test-crashy", Unit: "stado-test-crashy.service", Program: "/bin/sh", Args: []string{"-c", "exit 3"}}
	for _, s := range []registry.Service{healthy, crashy} {
		s := s
		t.Cleanup(func() { _ = m.Remove(context.Background(), s) })
		content, err := RenderSystemd(s)
		if err != nil {
			t.Fatal(err)
		}
		if res, err := m.Install(ctx, s, content); err != nil || res.Action != ActionInstalled {
			t.Fatalf("install %s: %+v %v", s.Unit, res, err)
		}
		if res, err := m.Install(ctx, s, content); err != nil || res.Action != ActionUnchanged {
			t.Fatalf("second install %s: %+v %v", s.Unit, res, err)
		}
		if err := m.Start(ctx, s.Unit); err != nil {
			t.Fatalf("start %s: %v", s.Unit, err)
		}
	}
	v := waitFor(t, m, crashy.Unit, 10*time.Second, func(v Verdict) bool { return v.State == StateFailing && v.Starts >= 2 })
	if v.State != StateFailing || v.LastExit != 3 || v.Starts < 2 || !strings.Contains(v.Sentence, "exited 3") {
		t.Errorf("crash loop: %+v", v)
	}
	v = waitFor(t, m, healthy.Unit, 5*time.Second, func(v Verdict) bool { return v.State == StateActive && v.PID > 0 })
	if v.State != StateActive || v.PID == 0 {
		t.Errorf("healthy: %+v", v)
	}
	lines, err := m.Logs(ctx, healthy.Unit, 2)
	if err != nil || len(lines) != 2 || !strings.HasSuffix(lines[1], "line2") {
		t.Errorf("logs %q %v", lines, err)
	}
	if err := m.Stop(ctx, healthy.Unit); err != nil {
		t.Fatal(err)
	}
	if v, _ := m.Show(ctx, healthy.Unit); v.State != StateInactive {
		t.Errorf("after stop: %+v", v)
	}
	if err := m.Remove(ctx, healthy); err != nil {
		t.Fatal(err)
	}
	if v, _ := m.Show(ctx, healthy.Unit); v.State != StateMissing {
		t.Errorf("after remove: %+v", v)
	}
	// A unit that hit the default start limit is started again by Start.
	limited := registry.Service{Name: "stado-test-limited", Unit: "stado-test-limited.service", Program: "/bin/sh", Args: []string{"-c", "exec sleep 300"}}
	t.Cleanup(func() { _ = m.Remove(context.Background(), limited) })
	content, _ := RenderSystemd(limited)
	// Put the default start limit back, then exhaust it with restarts.
	content = []byte(strings.Replace(string(content), "StartLimitIntervalSec=0", "StartLimitIntervalSec=10s\nStartLimitBurst=2", 1))
	if _, err := m.Install(ctx, limited, content); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		_ = m.job(ctx, "restart", limited.Unit, m.conn.RestartUnitContext)
	}
	if err := m.Start(ctx, limited.Unit); err != nil {
		t.Fatalf("start after the start limit: %v", err)
	}
	if v, _ := m.Show(ctx, limited.Unit); v.State != StateActive {
		t.Errorf("limited unit after Start: %+v", v)
	}
}

func BenchmarkSystemdShowMany50(b *testing.B) {
	ctx := context.Background()
	m, err := NewSystemd(ctx, registry.ScopeSystem, os.Getenv("HOME"), nil)
	if err != nil {
		b.Skipf("no systemd manager on D-Bus here: %v", err)
	}
	defer m.Close()
	names, err := m.ListLoaded(ctx)
	if err != nil || len(names) < 50 {
		b.Skipf("fewer than 50 loaded services (%d, %v)", len(names), err)
	}
	names = names[:50]
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := m.ShowMany(ctx, names); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSystemctlShow50Forks(b *testing.B) {
	ctx := context.Background()
	m, err := NewSystemd(ctx, registry.ScopeSystem, os.Getenv("HOME"), nil)
	if err != nil {
		b.Skipf("no systemd manager on D-Bus here: %v", err)
	}
	defer m.Close()
	names, err := m.ListLoaded(ctx)
	if err != nil || len(names) < 50 {
		b.Skipf("fewer than 50 loaded services (%d, %v)", len(names), err)
	}
	names = names[:50]
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
