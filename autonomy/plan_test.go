package autonomy

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/fleet"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/release/rollout"
	"github.com/wisent/stado/units"
)

func svc(name string) registry.Service {
	return registry.Service{Name: name, Unit: name + ".service", Program: "/bin/sleep", Args: []string{"infinity"}}
}

func freshRow(host, service, state string) beacon.Row {
	return beacon.Row{Host: host, Service: service, Unit: service + ".service", State: state, Beacon: beacon.Freshness{Kind: beacon.FreshnessFresh, Present: true, Pass: 7, AgeSeconds: 1}}
}

func staleRow(host, service string) beacon.Row {
	return beacon.Row{Host: host, Service: service, Unit: service + ".service", State: beacon.StateUnknown, Beacon: beacon.Freshness{Kind: beacon.FreshnessStale, Present: true, Stale: true, Reason: "beacon is 5m0s old, stale after 30s"}}
}

func check(service, state string) fleet.ServiceVerify {
	return fleet.ServiceVerify{Service: service, Unit: service + ".service", Path: "/etc/systemd/system/" + service + ".service", State: state, Loaded: state != units.StateMissing, Evidence: units.Verdict{Unit: service + ".service", State: state}}
}

func TestPlanDecidesEachServiceFromItsEvidence(t *testing.T) {
	absent := check("a", units.StateMissing)
	absent.FileAbsent, absent.Drift = true, true
	drift := check("a", units.StateActive)
	drift.Drift, drift.Diff = true, "-old\n+new\n"
	crash := check("a", units.StateFailing)
	crash.Evidence.Starts, crash.Evidence.LastExit, crash.Evidence.Sentence = 9, 3, "a.service runs no process: its last run exited 3 and its supervisor has started it 9 time(s)"
	crash.Logs = []string{"dying"}
	flapping := check("a", units.StateActive)
	flapping.Evidence.Starts = 40
	failingOnce := check("a", units.StateFailing)
	failingOnce.Evidence.Starts, failingOnce.Evidence.LastExit = 1, 2
	repeating := check("a", units.StateActive)
	repeating.RepeatingDropIns = []string{"/etc/systemd/system/a.service.d/override.conf"}
	unread := check("a", "")
	unread.Refusal = &channel.UnitRefusal{Code: "failure", Message: "read the unit: boom"}
	incomplete := svc("a")
	incomplete.Program, incomplete.Args, incomplete.UnitPath = "", nil, "/etc/systemd/system/a.service"

	cases := []struct {
		name    string
		decl    registry.Service
		beacon  *beacon.Row
		host    fleet.HostVerify
		action  string
		code    string
		contain string
	}{
		// The rows of the acceptance's broken fleet.
		{name: "unit file deleted: restore, would create", decl: svc("a"), beacon: ptr(freshRow("h", "a", units.StateMissing)),
			host: reach(absent), action: ActionRestore, contain: "would create /etc/systemd/system/a.service"},
		{name: "unit stopped: start", decl: svc("a"), beacon: ptr(freshRow("h", "a", units.StateInactive)),
			host: reach(check("a", units.StateInactive)), action: ActionStart},
		{name: "bytes edited: reinstall", decl: svc("a"), beacon: ptr(freshRow("h", "a", units.StateActive)),
			host: reach(drift), action: ActionReinstall},
		{name: "a drop-in repeats its commands: reinstall, which sets it aside", decl: svc("a"), beacon: ptr(freshRow("h", "a", units.StateActive)),
			host: reach(repeating), action: ActionReinstall, contain: "would set aside /etc/systemd/system/a.service.d/override.conf"},
		{name: "sshd stopped: unreachable naming the stage", decl: svc("a"), beacon: ptr(freshRow("h", "a", units.StateActive)),
			host: fleet.HostVerify{Host: "h", Stage: fleet.StageConnect, Error: &fleet.HostError{Message: "dial tcp 127.0.1.5:22: connect: connection refused"}},
			code: string(CodeUnreachable), contain: "stage connect"},
		{name: "no program: declaration_incomplete", decl: incomplete, beacon: ptr(freshRow("h", "a", units.StateActive)),
			host: reach(check("a", units.StateActive)), code: string(CodeDeclarationIncomplete)},
		{name: "crash loop: refused, not restarted", decl: svc("a"), beacon: ptr(freshRow("h", "a", units.StateFailing)),
			host: reach(crash), code: string(CodeCrashLoop), contain: "last line: dying"},
		{name: "crash loop caught between crashes: still the crash loop", decl: svc("a"), beacon: ptr(freshRow("h", "a", units.StateFailing)),
			host: reach(flapping), code: string(CodeCrashLoop)},
		// The other rules.
		{name: "failing without a loop: restart", decl: svc("a"), beacon: ptr(freshRow("h", "a", units.StateFailing)),
			host: reach(failingOnce), action: ActionRestart},
		{name: "failed: start", decl: svc("a"), beacon: ptr(freshRow("h", "a", units.StateFailed)),
			host: reach(check("a", units.StateFailed)), action: ActionStart},
		{name: "as declared: none", decl: svc("a"), beacon: ptr(freshRow("h", "a", units.StateActive)),
			host: reach(check("a", units.StateActive)), action: ActionNone},
		{name: "beacon active, verify missing: inconclusive", decl: svc("a"), beacon: ptr(freshRow("h", "a", units.StateActive)),
			host: reach(absent), code: string(CodeInconclusive), contain: "says a.service is active and the verify says missing"},
		{name: "stale beacon and an unread unit: no_evidence", decl: svc("a"), beacon: ptr(staleRow("h", "a")),
			host: reach(unread), code: string(CodeNoEvidence), contain: "stale after"},
		{name: "fresh beacon and an unread unit: inconclusive", decl: svc("a"), beacon: ptr(freshRow("h", "a", units.StateActive)),
			host: reach(unread), code: string(CodeInconclusive)},
		{name: "stale beacon, verify answered: planned from the verify", decl: svc("a"), beacon: ptr(staleRow("h", "a")),
			host: reach(check("a", units.StateInactive)), action: ActionStart},
		{name: "no beacon row, verify answered", decl: svc("a"),
			host: reach(check("a", units.StateActive)), action: ActionNone},
		{name: "recovery-list unit needing an action: recovery_unit", decl: registry.Service{Name: "stado", Unit: "stado.service", Program: "/usr/local/bin/stado", Args: []string{"host", "run"}},
			host: reach(fleet.ServiceVerify{Service: "stado", Unit: "stado.service", State: units.StateInactive}), code: "recovery_unit", contain: "--step host"},
		// A host asked for reachability only: its fresh beacon decides.
		{name: "beacon: file absent, restore", decl: svc("a"), beacon: filed(freshRow("h", "a", units.StateMissing), true, true),
			host: reachOnly(), action: ActionRestore, contain: "would create /etc/systemd/system/a.service"},
		{name: "beacon: stopped, start", decl: svc("a"), beacon: filed(freshRow("h", "a", units.StateInactive), false, false),
			host: reachOnly(), action: ActionStart},
		{name: "beacon: bytes drifted, reinstall", decl: svc("a"), beacon: filed(freshRow("h", "a", units.StateActive), true, false),
			host: reachOnly(), action: ActionReinstall, contain: "would install the declared bytes at /etc/systemd/system/a.service"},
		{name: "beacon: as declared, none", decl: svc("a"), beacon: filed(freshRow("h", "a", units.StateActive), false, false),
			host: reachOnly(), action: ActionNone},
		{name: "beacon: failing and started often, crash loop", decl: svc("a"), beacon: crashing(filed(freshRow("h", "a", units.StateFailing), false, false), 5),
			host: reachOnly(), code: string(CodeCrashLoop), contain: "last line: dying"},
		{name: "beacon: failing once, restart", decl: svc("a"), beacon: crashing(filed(freshRow("h", "a", units.StateFailing), false, false), 1),
			host: reachOnly(), action: ActionRestart, contain: "last exit 3"},
		{name: "beacon gone stale since the sweep was chosen: no_evidence", decl: svc("a"), beacon: ptr(staleRow("h", "a")),
			host: reachOnly(), code: string(CodeNoEvidence), contain: "reachability"},
		{name: "beacon: recovery-list unit stopped, recovery_unit", decl: registry.Service{Name: "stado", Unit: "stado.service", Program: "/usr/local/bin/stado", Args: []string{"host", "run"}},
			beacon: filed(freshRow("h", "stado", units.StateInactive), false, false), host: reachOnly(), code: "recovery_unit"},
		{name: "recovery-list unit running: none", decl: registry.Service{Name: "stado", Unit: "stado.service", Program: "/usr/local/bin/stado", Args: []string{"host", "run"}},
			host: reach(fleet.ServiceVerify{Service: "stado", Unit: "stado.service", State: units.StateActive}), action: ActionNone},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.host.Host = "h"
			in := Input{Doc: &registry.Document{Version: 1, Targets: []registry.Target{{Name: "h", OS: "linux", Services: []registry.Service{c.decl}}}},
				Catalog: catalog.Shipped(), Verify: &fleet.VerifyResult{Hosts: []fleet.HostVerify{c.host}}}
			if c.beacon != nil {
				in.Beacons = []beacon.Row{*c.beacon}
			}
			rows := Plan(in)
			if len(rows) != 1 {
				t.Fatalf("%d rows", len(rows))
			}
			r := rows[0]
			var got string
			if r.Refusal != nil {
				got = "refused " + string(r.Refusal.Code) + ": " + r.Refusal.Message
				if c.code == "" {
					t.Fatalf("got %s, want action %s", got, c.action)
				}
				if string(r.Refusal.Code) != c.code {
					t.Fatalf("got %s, want refusal %s", got, c.code)
				}
			} else {
				got = r.Action + ": " + r.Plan
				if r.Action != c.action {
					t.Fatalf("got %s, want %s%s", got, c.action, c.code)
				}
			}
			if !strings.Contains(got, c.contain) {
				t.Errorf("%q lacks %q", got, c.contain)
			}
		})
	}
}

// filed is r with the host's comparison of its unit file.
func filed(r beacon.Row, drift, absent bool) *beacon.Row {
	r.File = &beacon.FileCheck{Path: "/etc/systemd/system/" + r.Unit, Drift: drift, Absent: absent}
	return &r
}

// crashing is r failing with exit 3 after starts starts.
func crashing(r *beacon.Row, starts int) *beacon.Row {
	r.Starts, r.LastExit, r.LastStderr = starts, ptr(3), "dying"
	return r
}

func reachOnly() fleet.HostVerify { return fleet.HostVerify{Reachable: true, ReachOnly: true} }

func reach(svcs ...fleet.ServiceVerify) fleet.HostVerify {
	return fleet.HostVerify{Reachable: true, Services: svcs}
}

func ptr[T any](v T) *T { return &v }

func TestOnlyHostsWhoseBeaconStandsInForEveryUnitAreAskedForReachabilityAlone(t *testing.T) {
	incomplete := svc("old")
	incomplete.Program, incomplete.Args = "", nil
	doc := &registry.Document{Version: 1, Targets: []registry.Target{
		{Name: "filed", Services: []registry.Service{svc("a"), svc("b"), incomplete}},
		{Name: "stale", Services: []registry.Service{svc("a")}},
		{Name: "older-host", Services: []registry.Service{svc("a")}}, // its beacon compares no files
		{Name: "uncompared", Services: []registry.Service{svc("a")}},
		{Name: "empty"},
		// caught running after its supervisor restarted it: a crash loop
		// between two crashes, or a unit that recovered; the beacon alone
		// cannot tell, so the sweep reads it again
		{Name: "restarted", Services: []registry.Service{svc("a")}},
	}}
	unc := filed(freshRow("uncompared", "a", units.StateActive), false, false)
	unc.File.Uncompared = true
	restarted := filed(freshRow("restarted", "a", units.StateActive), false, false)
	restarted.Starts = CrashLoopStarts
	rows := []beacon.Row{*filed(freshRow("filed", "a", units.StateActive), false, false), *filed(freshRow("filed", "b", units.StateMissing), true, true),
		freshRow("filed", "old", units.StateActive), staleRow("stale", "a"), freshRow("older-host", "a", units.StateActive), *unc, *restarted}
	stands := StandingOnBeacons(doc, nil, rows)
	for host, want := range map[string]bool{"filed": true, "stale": false, "older-host": false, "uncompared": false, "empty": true, "restarted": false} {
		if stands(host) != want {
			t.Errorf("%s: reach only %v, want %v", host, stands(host), want)
		}
	}
}

func TestPlanNamesTheUnreachableStageInItsRefusal(t *testing.T) {
	in := Input{Doc: &registry.Document{Version: 1, Targets: []registry.Target{{Name: "h5", OS: "linux", Services: []registry.Service{svc("a"), svc("b")}}}},
		Verify: &fleet.VerifyResult{Hosts: []fleet.HostVerify{{Host: "h5", Stage: fleet.StageAuth, Error: &fleet.HostError{Message: "no identity accepted"}}}}}
	for _, r := range Plan(in) {
		if r.Refusal == nil || r.Refusal.Code != CodeUnreachable || r.Refusal.Stage != fleet.StageAuth {
			t.Errorf("%+v", r)
		}
	}
}

func TestResolveCapsTakesTheRegistryAsCeiling(t *testing.T) {
	c, err := ResolveCaps(registry.Autonomy{}, Requested{})
	if err != nil || c != DefaultCaps {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	c, err = ResolveCaps(registry.Autonomy{MaxConcurrent: 5, MaxFraction: 1, FailureBudget: 4}, Requested{MaxConcurrent: 3, FailureBudget: 2})
	if err != nil || c != (Caps{MaxConcurrent: 3, MaxFraction: 1, FailureBudget: 2}) {
		t.Fatalf("lowered: %+v %v", c, err)
	}
	_, err = ResolveCaps(registry.Autonomy{}, Requested{MaxConcurrent: 3})
	if !refusal.Is(err, CodeNotAuthorized) || !strings.Contains(err.Error(), "ceiling of 1") {
		t.Fatalf("above the ceiling: %v", err)
	}
	if (Caps{MaxFraction: 0.25}).PerService(3) != 1 || (Caps{MaxFraction: 0.5}).PerService(10) != 5 {
		t.Error("per-service share")
	}
}

// A fleet-size plan, made on every processor, is the plan of each target
// alone, in registry order.
func TestAFleetSizePlanIsEachTargetsPlanInRegistryOrder(t *testing.T) {
	doc, view, _ := benchFleet(300, 3, time.Now())
	rows := view.Rows("")
	// release rows: every third host converged (no row), every fifth not
	var releases []rollout.Row
	for i, tg := range doc.Targets {
		switch {
		case i%3 == 0:
			releases = append(releases, rollout.Row{Host: tg.Name, Product: "p", Declared: "2", Status: rollout.StatusConverged})
		case i%5 == 0:
			releases = append(releases, rollout.Row{Host: tg.Name, Product: "p", Declared: "2", Status: rollout.StatusDiffers})
		}
	}
	got := Plan(Input{Doc: doc, Beacons: rows, Releases: releases})
	var want []Row
	for i := range doc.Targets {
		one := *doc
		one.Targets = doc.Targets[i : i+1]
		want = append(want, Plan(Input{Doc: &one, Beacons: rows, Releases: releases})...)
	}
	if len(got) != 900+40 || !reflect.DeepEqual(got, want) {
		t.Fatalf("the fleet's plan (%d rows) is not its targets' plans in order (%d rows)", len(got), len(want))
	}
}
