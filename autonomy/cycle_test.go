package autonomy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

// cycleStore is a file store holding a registry of 4 hosts × 2 services
// (every host's first service stopped) and fresh beacons saying so.
func cycleStore(t *testing.T, a registry.Autonomy) (store.Store, channel.Connector) {
	t.Helper()
	now := time.Now()
	doc, view, connect := benchFleet(4, 2, now)
	doc.Autonomy = a
	return storeFleet(t, doc, view), connect
}

// storeFleet is a file store holding doc (every target at 127.0.0.1) and
// view's beacons.
func storeFleet(t testing.TB, doc *registry.Document, view *beacon.View) store.Store {
	t.Helper()
	st := fileStore(t)
	for i := range doc.Targets {
		doc.Targets[i].SSH.Address = "127.0.0.1"
	}
	ctx := context.Background()
	if _, err := registry.Push(ctx, st, doc, 0, "cycle test"); err != nil {
		t.Fatal(err)
	}
	for name, b := range view.Beacons {
		raw, _ := json.Marshal(b)
		if _, err := st.Put(ctx, store.BeaconPrefix+name, raw, store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

func TestAReportCycleAsksOnlyReachabilityOfHostsWhoseBeaconsSayStateAndDrift(t *testing.T) {
	doc, view, hosts := benchHosts(4, 2, time.Now())
	// host1's second unit file was edited, its host says; host3 runs an
	// earlier host process that compares no files
	view.Beacons["host1"].Units[1].File = &beacon.FileCheck{Path: "/etc/systemd/system/svc1.service", Drift: true, Reason: "the installed bytes differ from the rendering from line 5"}
	for i := range view.Beacons["host3"].Units {
		view.Beacons["host3"].Units[i].File = nil
	}
	st := storeFleet(t, doc, view)
	connect := func(t registry.Target) channel.Host { return hosts[t.Name] }
	r := &Runner{Store: st, Connect: func() (channel.Connector, func()) { return connect, func() {} }, Actor: &countingActor{}}
	c, err := r.Run(context.Background(), Options{Mode: registry.AutonomyReport})
	if err != nil {
		t.Fatal(err)
	}
	if c.Counts[ActionStart] != 1 || c.Counts[ActionReinstall] != 1 || c.Counts[ActionNone] != 6 {
		t.Fatalf("counts %v", c.Counts)
	}
	for name, want := range map[string]int{"host0": 0, "host1": 0, "host2": 0, "host3": 2} {
		if got := hosts[name].read; len(got) != 1 || got[0] != want {
			t.Errorf("%s was asked %v declarations per call, want one call of %d", name, got, want)
		}
	}
	for _, row := range c.Rows {
		if row.Host == "host1" && row.Service == "svc1" {
			if !row.Evidence.Verify.ReachOnly || row.Evidence.Beacon.File == nil || !row.Evidence.Beacon.File.Drift || row.Evidence.Verify.Check != nil {
				t.Errorf("the reinstall's evidence: %+v", row.Evidence)
			}
		}
	}
}

type countingActor struct{ hosts []string }

func (a *countingActor) ActOn(_ context.Context, host string, rows []*Row, proceed func() bool, done func(*Row)) {
	for _, r := range rows {
		if !proceed() {
			return
		}
		a.hosts = append(a.hosts, host)
		r.Result = &ActionResult{Action: r.Action, OK: true, Clean: true}
		done(r)
	}
}

func TestReportCycleRecordsThePlanAndActsOnNothing(t *testing.T) {
	st, connect := cycleStore(t, registry.Autonomy{})
	actor := &countingActor{}
	r := &Runner{Store: st, Connect: func() (channel.Connector, func()) { return connect, func() {} }, Actor: actor}
	ctx := context.Background()
	_, before, _ := registry.Load(ctx, st)
	c, err := r.Run(ctx, Options{Mode: registry.AutonomyReport})
	if err != nil {
		t.Fatal(err)
	}
	if c.Counts[ActionStart] != 1 || c.Counts[ActionNone] != 7 || len(actor.hosts) != 0 || c.Holder != nil {
		t.Fatalf("counts %v, acted on %v, holder %v", c.Counts, actor.hosts, c.Holder)
	}
	if _, after, _ := registry.Load(ctx, st); after.Revision != before.Revision {
		t.Errorf("registry revision %d became %d", before.Revision, after.Revision)
	}
	if h, _ := CurrentHolder(ctx, st); h != nil {
		t.Errorf("a report cycle took the lease: %+v", h)
	}
	cs, err := History(ctx, st, 0)
	if err != nil || len(cs) != 1 || cs[0].ID != c.ID || len(cs[0].Rows) != 8 {
		t.Fatalf("history %+v %v", cs, err)
	}
}

func TestEnforceNeedsTheRegistrysAuthorization(t *testing.T) {
	st, connect := cycleStore(t, registry.Autonomy{Mode: registry.AutonomyReport})
	actor := &countingActor{}
	r := &Runner{Store: st, Connect: func() (channel.Connector, func()) { return connect, func() {} }, Actor: actor}
	c, err := r.Run(context.Background(), Options{Mode: registry.AutonomyEnforce})
	if !refusal.Is(err, CodeNotAuthorized) || c != nil || len(actor.hosts) != 0 {
		t.Fatalf("cycle %v, err %v, acted on %v", c, err, actor.hosts)
	}
	if cs, _ := History(context.Background(), st, 0); len(cs) != 0 {
		t.Errorf("a refused cycle was recorded: %+v", cs)
	}
}

func TestEnforceActsUnderTheLeaseAndASecondEnforcerIsRefused(t *testing.T) {
	st, connect := cycleStore(t, registry.Autonomy{Mode: registry.AutonomyEnforce})
	ctx := context.Background()
	other := NewHolder(time.Now(), MinLeaseTTL)
	other.Host, other.PID = "ops9", 4242
	held, err := Acquire(ctx, st, other, nil)
	if err != nil {
		t.Fatal(err)
	}
	actor := &countingActor{}
	r := &Runner{Store: st, Connect: func() (channel.Connector, func()) { return connect, func() {} }, Actor: actor}
	_, err = r.Run(ctx, Options{Mode: registry.AutonomyEnforce, LeaseTTL: MinLeaseTTL})
	var lh *LeaseHeldError
	if !errors.As(err, &lh) || lh.Holder.Host != "ops9" || lh.Holder.PID != 4242 || len(actor.hosts) != 0 {
		t.Fatalf("with the lease held: %v, acted on %v", err, actor.hosts)
	}
	held.Release(ctx)
	c, err := r.Run(ctx, Options{Mode: registry.AutonomyEnforce, LeaseTTL: MinLeaseTTL})
	if err != nil {
		t.Fatal(err)
	}
	if len(actor.hosts) != 1 || actor.hosts[0] != "host0" || c.Holder == nil || c.Caps == nil || *c.Caps != DefaultCaps {
		t.Fatalf("acted on %v, holder %v, caps %v", actor.hosts, c.Holder, c.Caps)
	}
	if h, _ := CurrentHolder(ctx, st); h != nil {
		t.Errorf("the lease outlived the cycle: %+v", h)
	}
}

func TestACycleRecordsWhereItsTimeWent(t *testing.T) {
	st, connect := cycleStore(t, registry.Autonomy{Mode: registry.AutonomyEnforce})
	ctx := context.Background()
	r := &Runner{Store: st, Connect: func() (channel.Connector, func()) { return connect, func() {} }, Actor: &countingActor{}}
	report, err := r.Run(ctx, Options{Mode: registry.AutonomyReport})
	if err != nil {
		t.Fatal(err)
	}
	if p := report.Phases; p.Read <= 0 || p.Sweep <= 0 || p.Plan <= 0 || p.Enforce != 0 {
		t.Errorf("a report cycle's phases %+v: want read, sweep and plan measured, nothing acted", p)
	}
	enforce, err := r.Run(ctx, Options{Mode: registry.AutonomyEnforce, LeaseTTL: MinLeaseTTL})
	if err != nil {
		t.Fatal(err)
	}
	if p := enforce.Phases; p.Read <= 0 || p.Sweep <= 0 || p.Plan <= 0 || p.Enforce <= 0 {
		t.Errorf("an enforcing cycle's phases %+v: want every phase measured", p)
	}
	cs, err := History(ctx, st, 0)
	if err != nil || len(cs) != 2 || cs[0].Phases != enforce.Phases {
		t.Fatalf("the stored cycle lost its phases: %+v, want %+v (%v)", cs, enforce.Phases, err)
	}
}

// Only an enforcing cycle that failed or skipped an action is an error.
func TestCycleOutcomeFailsOnlyAnEnforcingCycleWithFailedOrSkippedActions(t *testing.T) {
	for _, tc := range []struct {
		c    Cycle
		fail bool
	}{
		{Cycle{Mode: registry.AutonomyReport, Failed: 3}, false},
		{Cycle{Mode: registry.AutonomyEnforce}, false},
		{Cycle{Mode: registry.AutonomyEnforce, Failed: 1}, true},
		{Cycle{Mode: registry.AutonomyEnforce, Counts: map[string]int{string(CodeNotAttempted): 2}}, true},
		{Cycle{Mode: registry.AutonomyEnforce, Counts: map[string]int{string(CodeCrashLoop): 1}}, false},
	} {
		if err := tc.c.Outcome(); (err != nil) != tc.fail {
			t.Errorf("%+v: %v, want failure %v", tc.c, err, tc.fail)
		}
	}
}

// A cycle with the read half's cache validates the stored registry once:
// the next cycle over the same bytes plans the same, and a registry changed
// in the store behind stado's back is validated again and refused.
func TestACycleValidatesTheSameStoredRegistryOnceAndStillRefusesOneChangedBehindItsBack(t *testing.T) {
	st, connect := cycleStore(t, registry.Autonomy{})
	ctx := context.Background()
	cache := &beacon.RegistryCache{Dir: t.TempDir(), Store: "file:///cycle-test"}
	r := &Runner{Store: st, Cache: cache, Connect: func() (channel.Connector, func()) { return connect, func() {} }, Actor: &countingActor{}}
	first, err := r.Run(ctx, Options{Mode: registry.AutonomyReport})
	if err != nil {
		t.Fatal(err)
	}
	if files, _ := os.ReadDir(cache.Dir); len(files) != 1 {
		t.Fatalf("the cycle recorded no validation in %s: %v", cache.Dir, files)
	}
	second, err := r.Run(ctx, Options{Mode: registry.AutonomyReport})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(first.Counts, second.Counts) || len(first.Rows) != len(second.Rows) {
		t.Fatalf("a cycle over the validated registry planned %v, the first %v", second.Counts, first.Counts)
	}
	doc, _, err := registry.Load(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	doc.Targets[0].Services[0].Unit = "../escape.service"
	raw, err := json.Marshal(map[string]any{"meta": store.Meta{Writer: "by hand"}, "document": doc})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Put(ctx, store.RegistryKey, raw, store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(ctx, Options{Mode: registry.AutonomyReport}); err == nil || !strings.Contains(err.Error(), "invalid") {
		t.Fatalf("a registry changed behind stado's back was not validated again: %v", err)
	}
}

// A report cycle over a registry it validated before reads it as an
// outline, yet the hosts its sweep verifies in full get their declarations
// whole (what the host renders and compares), and it plans what a cycle
// over the whole document plans.
func TestAReportCycleOverTheOutlineSendsWholeDeclarationsToTheHostsItVerifies(t *testing.T) {
	doc, view, hosts := benchHosts(100, 2, time.Now())
	for i := range view.Beacons["host3"].Units {
		view.Beacons["host3"].Units[i].File = nil // an earlier host process: no file comparison
	}
	st := storeFleet(t, doc, view)
	connect := func(t registry.Target) channel.Host { return hosts[t.Name] }
	cache := &beacon.RegistryCache{Dir: t.TempDir(), Store: "file:///outline-test"}
	r := &Runner{Store: st, Cache: cache, Connect: func() (channel.Connector, func()) { return connect, func() {} }, Actor: &countingActor{}}
	var cycles []*Cycle
	for range 2 { // the first validates the registry, the second reads the outline
		c, err := r.Run(context.Background(), Options{Mode: registry.AutonomyReport})
		if err != nil {
			t.Fatal(err)
		}
		cycles = append(cycles, c)
	}
	decided := func(c *Cycle) []string {
		var out []string
		for _, r := range c.Rows {
			out = append(out, fmt.Sprintf("%s/%s %s %q %v %v", r.Host, r.Service, r.Action, r.Plan, r.Refusal, r.Evidence.Verify.ReachOnly))
		}
		return out
	}
	if a, b := decided(cycles[0]), decided(cycles[1]); !reflect.DeepEqual(a, b) {
		t.Fatalf("the cycle over the outline planned\n%v\nthe cycle over the whole document\n%v", b, a)
	}
	got := hosts["host3"].got
	if len(got) != 4 {
		t.Fatalf("host3 was sent %d declarations in two cycles, want 4", len(got))
	}
	for _, s := range got {
		if !reflect.DeepEqual(s.Args, []string{"infinity"}) {
			t.Fatalf("host3 was sent a cut declaration: %+v", s)
		}
	}
	if n := len(hosts["host4"].got); n != 0 {
		t.Fatalf("host4, whose beacon stands in, was sent %d declarations", n)
	}
}

// A repeating run opens one set of connections for every cycle (the
// sweep's and the actions') and closes it when its context ends.
func TestEveryKeepsOneSetOfConnectionsAcrossItsCycles(t *testing.T) {
	st, connect := cycleStore(t, registry.Autonomy{})
	opened, closed := 0, 0
	r := &Runner{Store: st, Actor: &countingActor{}, Connect: func() (channel.Connector, func()) {
		opened++
		return connect, func() { closed++ }
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cycles := 0
	r.Every(ctx, Options{Mode: registry.AutonomyReport}, time.Millisecond, func(c *Cycle, err error) {
		if ctx.Err() != nil {
			return // a tick that raced the end may start one more cycle
		}
		if c == nil || err != nil {
			t.Errorf("cycle %d: %v", cycles+1, err)
		}
		if cycles++; cycles == 3 {
			cancel()
		}
	})
	if cycles != 3 || opened != 1 || closed != 1 {
		t.Fatalf("%d cycles over %d connection set(s) opened, %d closed; want 3 over one set", cycles, opened, closed)
	}
}
