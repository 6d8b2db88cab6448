package fleet_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/channel/local"
	"github.com/wisent/stado/fleet"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
	"github.com/wisent/stado/units"
	"github.com/wisent/stado/units/unitstest"
)

const convergeDoc = `version: 1
targets:
  - name: host1
    os: linux
    ssh: {address: 127.0.0.1, port: 1}
    services:
      - {name: api, unit: api.service, scope: user, program: /usr/local/bin/api}
  - name: host2
    os: linux
    ssh: {address: 127.0.0.1, port: 1}
    services:
      - {name: api, unit: api.service, scope: user, program: /usr/local/bin/api}
  - name: host3
    os: linux
    ssh: {address: 127.0.0.1, port: 1}
    services:
      - {name: api, unit: api.service, scope: user, program: /usr/local/bin/api}
`

// convergeBed is three in-process hosts, each over its own in-memory
// manager, with api ensured on all three and then withdrawn from host3's
// declarations: declared on host1-2, running on host1-3.
type convergeBed struct {
	st  store.Store
	mem map[string]*unitstest.Memory
	hs  map[string]*local.Host
}

func newConvergeBed(t *testing.T) *convergeBed {
	t.Helper()
	st, err := store.OpenFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	doc, err := registry.Parse([]byte(convergeDoc), "fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := registry.Push(context.Background(), st, doc, 0, "fixture"); err != nil {
		t.Fatal(err)
	}
	b := &convergeBed{st: st, mem: map[string]*unitstest.Memory{}, hs: map[string]*local.Host{}}
	for _, name := range []string{"host1", "host2", "host3"} {
		home := t.TempDir()
		mem := unitstest.NewMemory(home)
		clock := &fakeClock{now: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
		b.mem[name] = mem
		b.hs[name] = &local.Host{GOOS: "linux", Home: home, Now: clock.Now, After: clock.After,
			Manager: func(context.Context, string) (units.Manager, func(), error) { return mem, func() {}, nil }}
	}
	if _, err := b.fleet(t).Ensure(context.Background(), fleet.EnsureOptions{Name: "api", All: true, Settle: time.Second}, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := registry.Update(context.Background(), st, "host3 leaves api", func(d *registry.Document) error {
		tg, _ := d.Target("host3")
		tg.Services = nil
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *convergeBed) fleet(t *testing.T) *fleet.Fleet {
	t.Helper()
	f, err := fleet.Open(context.Background(), b.st, func(tg registry.Target) channel.Host { return b.hs[tg.Name] })
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (b *convergeBed) verdict(t *testing.T, host string) units.Verdict {
	t.Helper()
	v, err := b.mem[host].Show(context.Background(), "api.service")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// host3's beacon, as the caller reads it: api.service runs undeclared.
var host3Runs = []fleet.Sighting{{Host: "host3", Unit: "api.service", State: "active", PID: 1001}}

var allAtOnce = fleet.Caps{MaxConcurrent: 3, MaxFraction: 1, FailureBudget: 1}

func TestConvergeRetiresTheUndeclaredCopyAndLeavesTheDeclaredOnesRunning(t *testing.T) {
	b := newConvergeBed(t)
	pid1, pid2 := b.verdict(t, "host1").PID, b.verdict(t, "host2").PID
	res, err := b.fleet(t).Converge(context.Background(), fleet.ConvergeOptions{Name: "api", Sightings: host3Runs, Caps: fleet.DefaultCaps})
	if err != nil {
		t.Fatalf("converge: %v\n%s", err, strings.Join(res.Lines(), "\n"))
	}
	if v := b.verdict(t, "host3"); v.State != units.StateMissing || b.mem["host3"].Calls["Remove"] != 1 {
		t.Fatalf("host3's copy is %s after converge (removes %d), want it retired", v.State, b.mem["host3"].Calls["Remove"])
	}
	for host, pid := range map[string]int{"host1": pid1, "host2": pid2} {
		if v := b.verdict(t, host); v.State != units.StateActive || v.PID != pid || b.mem[host].Calls["Restart"] != 0 {
			t.Fatalf("%s: %s pid %d (was %d), restarts %d: the declared copy was disturbed", host, v.State, v.PID, pid, b.mem[host].Calls["Restart"])
		}
	}
	if len(res.Rows) != 3 || res.Counts[fleet.OutcomeDone] != 3 || res.Rows[2].Action != fleet.ConvergeRetire || res.Rows[2].Host != "host3" {
		t.Fatalf("rows %+v counts %v", res.Rows, res.Counts)
	}
	// the registry is the placement: converge writes no declaration
	f := b.fleet(t)
	if tg, _ := f.Doc.Target("host3"); len(tg.Services) != 0 {
		t.Fatalf("host3 declares %v after converge", tg.Services)
	}
}

func TestConvergeDryRunPrintsThePlanAndTouchesNothing(t *testing.T) {
	b := newConvergeBed(t)
	before := map[string]map[string]int{}
	for h, m := range b.mem {
		before[h] = map[string]int{"Install": m.Calls["Install"], "Remove": m.Calls["Remove"], "Restart": m.Calls["Restart"], "Start": m.Calls["Start"]}
	}
	res, err := b.fleet(t).Converge(context.Background(), fleet.ConvergeOptions{Name: "api", Sightings: host3Runs, Caps: fleet.DefaultCaps, DryRun: true})
	if err != nil {
		t.Fatalf("converge --dry-run: %v", err)
	}
	for h, m := range b.mem {
		for call, n := range before[h] {
			if m.Calls[call] != n {
				t.Fatalf("%s: %s called %d times under --dry-run (was %d)", h, call, m.Calls[call], n)
			}
		}
	}
	text := strings.Join(res.Lines(), "\n")
	for _, want := range []string{"would converge api", "host1: ensure api.service: would", "host3: retire api.service: would unit-remove api.service", "the beacon of host3 shows api.service active (pid 1001)"} {
		if !strings.Contains(text, want) {
			t.Fatalf("the plan lacks %q:\n%s", want, text)
		}
	}
	if res.Counts[fleet.OutcomePlanned] != 3 {
		t.Fatalf("counts %v, want 3 planned", res.Counts)
	}
}

func TestConvergeRetiresNothingWhenADeclaredCopyDoesNotStand(t *testing.T) {
	b := newConvergeBed(t)
	// host1's unit now exits at once: a changed declaration makes ensure restart it
	b.mem["host1"].SetBehaviour("api.service", unitstest.ExitsAfterStart)
	if _, _, err := registry.Update(context.Background(), b.st, "new args", func(d *registry.Document) error {
		for _, h := range []string{"host1", "host2"} {
			tg, _ := d.Target(h)
			tg.Services[0].Args = []string{"--v2"}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	res, err := b.fleet(t).Converge(context.Background(), fleet.ConvergeOptions{Name: "api", Sightings: host3Runs, Caps: allAtOnce})
	if err == nil {
		t.Fatalf("converge succeeded with a failing ensure:\n%s", strings.Join(res.Lines(), "\n"))
	}
	if v := b.verdict(t, "host3"); v.State != units.StateActive || b.mem["host3"].Calls["Remove"] != 0 {
		t.Fatalf("host3's copy is %s: retired although host1's ensure failed", v.State)
	}
	last := res.Rows[len(res.Rows)-1]
	if last.Action != fleet.ConvergeRetire || last.Outcome != fleet.OutcomeSkipped || last.Error.Code != string(refusal.NotAttempted) {
		t.Fatalf("the retire row: %+v %+v", last, last.Error)
	}
}

func TestConvergeStopsAtTheFailureBudget(t *testing.T) {
	b := newConvergeBed(t)
	b.mem["host1"].SetBehaviour("api.service", unitstest.ExitsAfterStart)
	if _, _, err := registry.Update(context.Background(), b.st, "new args", func(d *registry.Document) error {
		for _, h := range []string{"host1", "host2"} {
			tg, _ := d.Target(h)
			tg.Services[0].Args = []string{"--v2"}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// one host at a time: host1 fails first, so host2 is never started
	res, _ := b.fleet(t).Converge(context.Background(), fleet.ConvergeOptions{Name: "api", Caps: fleet.Caps{MaxConcurrent: 1, MaxFraction: 1, FailureBudget: 1}})
	if res.Rows[1].Host != "host2" || res.Rows[1].Outcome != fleet.OutcomeSkipped || res.Rows[1].Error.Code != string(refusal.NotAttempted) ||
		b.mem["host2"].Calls["Restart"] != 0 || !strings.Contains(res.Stopped, "failure budget of 1") {
		t.Fatalf("host2 %+v, stopped %q, restarts %d", res.Rows[1], res.Stopped, b.mem["host2"].Calls["Restart"])
	}
}

// PlanConverge is decided from the registry, the catalog and the
// sightings alone: one case per rule.
func TestPlanConvergeDecidesEveryHostFromItsEvidence(t *testing.T) {
	doc, err := registry.Parse([]byte(convergeDoc+`  - name: host4
    os: linux
    ssh: {address: 127.0.0.1, port: 1}
`), "fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc.Targets[2].Services = nil // host3 declares nothing
	cat := catalog.OrShipped(nil)
	type want struct{ host, action, outcome, code string }
	cases := []struct {
		name      string
		sightings []fleet.Sighting
		caps      fleet.Caps
		want      []want
	}{
		// rule 1: the declared hosts get an ensure; rule 2: an undeclared copy a retire
		{"one copy", []fleet.Sighting{{Host: "host3", Unit: "api.service"}}, fleet.DefaultCaps,
			[]want{{"host1", "ensure", "", ""}, {"host2", "ensure", "", ""}, {"host3", "retire", "", ""}}},
		// a copy on a declaring host, and another unit, are not this service's to retire
		{"not ours", []fleet.Sighting{{Host: "host1", Unit: "api.service"}, {Host: "host3", Unit: "other.service"}}, fleet.DefaultCaps,
			[]want{{"host1", "ensure", "", ""}, {"host2", "ensure", "", ""}}},
		// rule 2: a host the registry does not know cannot be reached
		{"no target", []fleet.Sighting{{Host: "elsewhere", Unit: "api.service"}}, allAtOnce,
			[]want{{"host1", "ensure", "", ""}, {"host2", "ensure", "", ""}, {"elsewhere", "retire", "skipped", "not_found"}}},
		// rule 3: 4 hosts at max_fraction 0.25 retire one copy per converge
		{"capped", []fleet.Sighting{{Host: "host4", Unit: "api.service"}, {Host: "host3", Unit: "api.service"}}, fleet.DefaultCaps,
			[]want{{"host1", "ensure", "", ""}, {"host2", "ensure", "", ""}, {"host3", "retire", "", ""}, {"host4", "retire", "skipped", "capped"}}},
		// rule 3 with the registry's ceiling raised: both go
		{"uncapped", []fleet.Sighting{{Host: "host4", Unit: "api.service"}, {Host: "host3", Unit: "api.service"}}, allAtOnce,
			[]want{{"host1", "ensure", "", ""}, {"host2", "ensure", "", ""}, {"host3", "retire", "", ""}, {"host4", "retire", "", ""}}},
	}
	for _, c := range cases {
		rows, _, err := fleet.PlanConverge(doc, cat, "api", c.sightings, c.caps)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got []want
		for _, r := range rows {
			w := want{r.Host, r.Action, r.Outcome, ""}
			if r.Error != nil {
				w.code = r.Error.Code
			}
			if r.Evidence == "" {
				t.Fatalf("%s: row %s carries no evidence", c.name, r.Host)
			}
			got = append(got, w)
		}
		if len(got) != len(c.want) {
			t.Fatalf("%s: rows %v, want %v", c.name, got, c.want)
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Fatalf("%s: row %d is %v, want %v", c.name, i, got[i], c.want[i])
			}
		}
	}
	// rule 1: nothing declared, nothing to converge to
	if _, _, err := fleet.PlanConverge(doc, cat, "nosuch", nil, fleet.DefaultCaps); !refusal.Is(err, refusal.NotFound) {
		t.Fatalf("converge of an undeclared service: %v, want not_found", err)
	}
}

// A copy of a product with a drain step is drained before its unit is
// removed, as retire drains; a failed drain leaves it running.
func TestConvergeDrainsACopyBeforeRetiringItAndKeepsItWhenTheDrainFails(t *testing.T) {
	for _, drainOK := range []bool{true, false} {
		b := newConvergeBed(t)
		agent := registry.Service{Name: "oarbank-agent", Unit: "oarbank-agent.service", Scope: "user", Product: "oarbank-agent",
			Program: "/usr/local/bin/oarbank-agent", Args: []string{"run"}, Env: map[string]string{"OARBANK_COORDINATOR": "http://127.0.0.1:9/"}}
		add := func(hosts ...string) {
			if _, _, err := registry.Update(context.Background(), b.st, "agent", func(d *registry.Document) error {
				for _, h := range hosts {
					tg, _ := d.Target(h)
					tg.Services = append(tg.Services, agent)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		add("host1", "host2", "host3")
		if _, err := b.fleet(t).Ensure(context.Background(), fleet.EnsureOptions{Name: "oarbank-agent", All: true, Settle: time.Second}, nil); err != nil {
			t.Fatal(err)
		}
		if _, _, err := registry.Update(context.Background(), b.st, "host3 leaves the agent", func(d *registry.Document) error {
			tg, _ := d.Target("host3")
			tg.Services = nil
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		var steps []string
		removesBefore := -1
		b.hs["host3"].RunStep = func(_ context.Context, _ *catalog.Catalog, step string, env map[string]string) channel.StepResult {
			steps, removesBefore = append(steps, step+" "+env["OARBANK_HOME"]), b.mem["host3"].Calls["Remove"]
			res := channel.StepResult{Step: step, OK: drainOK, Output: "drained"}
			if !drainOK {
				code := 1
				res.ExitCode, res.Code, res.Output = &code, string(refusal.StepFailed), "workload still runs"
			}
			return res
		}
		res, err := b.fleet(t).Converge(context.Background(), fleet.ConvergeOptions{Name: "oarbank-agent", Caps: fleet.DefaultCaps,
			Sightings: []fleet.Sighting{{Host: "host3", Unit: "oarbank-agent.service", State: "active"}}})
		v, _ := b.mem["host3"].Show(context.Background(), "oarbank-agent.service")
		last := res.Rows[len(res.Rows)-1]
		switch {
		case len(steps) != 1 || steps[0] != "oarbank-drain /var/lib/oarbank" || removesBefore != 0:
			t.Fatalf("drain %v: steps %v, removes before the drain %d", drainOK, steps, removesBefore)
		case drainOK && (err != nil || v.State != units.StateMissing || last.Retire.Drain.State != fleet.DrainDrained):
			t.Fatalf("drained: %v, host3 %s, row %+v", err, v.State, last)
		case !drainOK && (!refusal.Is(err, refusal.DrainFailed) || v.State != units.StateActive || last.Error.Code != string(refusal.DrainFailed)):
			t.Fatalf("failed drain: %v, host3 %s, row %+v", err, v.State, last)
		}
	}
}
