package fleet

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/units"
)

// An ensure that set drop-ins aside says so under its host's line, each
// drop-in with the name it was given and what it repeated.
func TestEnsureLinesNameEachDropInSetAside(t *testing.T) {
	r := EnsureOutcome{Host: "web1", OK: true, Unit: "web.service", Install: units.ActionUnchanged, Run: channel.RunRestarted,
		Path: "/etc/systemd/system/web.service", Verdict: &units.Verdict{State: units.StateActive, PID: 42},
		SetAside: []channel.SetAsideDropIn{{Path: "/etc/systemd/system/web.service.d/override.conf", How: channel.SetAsideRenamed,
			To: "/etc/systemd/system/web.service.d/override.conf.stado-merged", Keys: []string{"ExecStartPre", "ExecStop"}},
			{Path: "/etc/systemd/system/web@.service.d/pre.conf", How: channel.SetAsideMasked,
				To: "/etc/systemd/system/web@1.service.d/pre.conf", Keys: []string{"ExecStartPre"}}}}
	want := []string{
		"web1: web.service unchanged (/etc/systemd/system/web.service), restarted, active pid 42",
		"  set aside drop-in /etc/systemd/system/web.service.d/override.conf as override.conf.stado-merged: the declaration holds it, and it repeated ExecStartPre, ExecStop",
		"  masked drop-in /etc/systemd/system/web@.service.d/pre.conf for this unit (/etc/systemd/system/web@1.service.d/pre.conf links to /dev/null): the declaration holds it, and it repeated ExecStartPre",
	}
	if got := r.Lines(); !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
	plan := planLines(ensurePlan{service: registry.Service{Name: "web", Unit: "web.service"}}, channel.EnsureResult{Install: units.ActionUnchanged, Run: channel.RunRestarted,
		Path: r.Path, SetAside: r.SetAside})
	if len(plan) < 2 || plan[1] != "set aside drop-in /etc/systemd/system/web.service.d/override.conf as override.conf.stado-merged (the declaration holds it)" {
		t.Errorf("plan: %q", plan)
	}
}

// A service whose drop-in repeats its commands is not clean, and verify's
// text names the drop-in.
func TestVerifyCountsARepeatingDropInAsNotClean(t *testing.T) {
	s := ServiceVerify{Service: "web", Unit: "web.service", Path: "/etc/systemd/system/web.service", Loaded: true,
		State: units.StateActive, Evidence: units.Verdict{State: units.StateActive, PID: 7}}
	if !s.Clean() {
		t.Fatal("an active unit as declared is not clean")
	}
	s.RepeatingDropIns = []string{"/etc/systemd/system/web.service.d/override.conf"}
	if s.Clean() {
		t.Error("a unit whose drop-in repeats its commands reads clean")
	}
	want := "    drop-in /etc/systemd/system/web.service.d/override.conf repeats commands the declaration already runs (service ensure sets it aside)"
	if lines := s.Lines(); !slices.Contains(lines, want) {
		t.Errorf("verify lines %q lack %q", lines, want)
	}
}

// TestARefusedHostReadsAsRefusedNotFailed: a host whose ensure or restart was
// refused (exit 3, nothing changed) says "refused" on its line; only a
// failure says "failed".
func TestARefusedHostReadsAsRefusedNotFailed(t *testing.T) {
	refused := DescribeHostError("h1", refusal.New(refusal.NotFound, "h1: no unit brama.service"))
	failed := DescribeHostError("h1", errors.New("h1: the disk is gone"))
	for _, c := range []struct {
		name  string
		lines []string
		want  string
	}{
		{"ensure refused", EnsureOutcome{Host: "h1", Error: refused}.Lines(), "h1: refused: no unit brama.service"},
		{"restart refused", RestartOutcome{Host: "h1", Error: refused}.Lines(), "h1: refused: no unit brama.service"},
		{"ensure failed", EnsureOutcome{Host: "h1", Error: failed}.Lines(), "h1: failed: the disk is gone"},
	} {
		if len(c.lines) == 0 || c.lines[0] != c.want {
			t.Errorf("%s: %q, want %q", c.name, c.lines, c.want)
		}
	}
}

// TestRecoveriesOfAHostNameTheServiceFilterWhenNoneMatch: the remote read of
// a register with no row of the asked service names the filter and the host.
func TestRecoveriesOfAHostNameTheServiceFilterWhenNoneMatch(t *testing.T) {
	got := RecoveriesResult{Host: "h2", File: "/r.jsonl", Service: "nosuch"}.Lines()
	if want := `no recoveries of service "nosuch" in /r.jsonl on h2`; len(got) != 1 || got[0] != want {
		t.Errorf("%q, want %q", got, want)
	}
}
