package autonomy

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/fleet"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/units"
)

// answeringHost is an in-process Host: it answers verify from what it was
// told it runs, every unit active with the declared bytes except the ones
// listed as stopped. The other verbs are not used by planning.
type answeringHost struct {
	channel.Host
	stopped map[string]bool

	mu sync.Mutex
	// read counts the declarations each Verify call carried; got holds
	// them all
	read []int
	got  []registry.Service
}

func (h *answeringHost) OS() string { return registry.OSLinux }

func (h *answeringHost) Verify(_ context.Context, req channel.VerifyRequest) (channel.VerifyResult, error) {
	h.mu.Lock()
	h.read = append(h.read, len(req.Services))
	for _, vs := range req.Services {
		h.got = append(h.got, vs.Service)
	}
	h.mu.Unlock()
	res := channel.VerifyResult{Units: make([]channel.UnitCheck, len(req.Services))}
	for i, vs := range req.Services {
		s := vs.Service
		state := units.StateActive
		if h.stopped[s.Name] {
			state = units.StateInactive
		}
		res.Units[i] = channel.UnitCheck{Service: s.Name, Unit: s.Unit, Scope: s.EffectiveScope(),
			Path: "/etc/systemd/system/" + s.Unit, Verdict: units.Verdict{Unit: s.Unit, State: state, PID: 100 + i, Starts: 1}}
	}
	return res, nil
}

// benchFleet is n hosts of m services each, their beacons fresh at now
// (each unit's file as declared, the host says), and one in-process Host
// per target; every tenth host has one service stopped.
func benchFleet(n, m int, now time.Time) (*registry.Document, *beacon.View, channel.Connector) {
	doc, view, hosts := benchHosts(n, m, now)
	return doc, view, func(t registry.Target) channel.Host { return hosts[t.Name] }
}

func benchHosts(n, m int, now time.Time) (*registry.Document, *beacon.View, map[string]*answeringHost) {
	doc := &registry.Document{Version: 1}
	view := &beacon.View{Document: doc, Beacons: map[string]*beacon.Beacon{}, Unreadable: map[string]string{}, Now: now}
	hosts := map[string]*answeringHost{}
	for i := range n {
		t := registry.Target{Name: fmt.Sprintf("host%d", i), OS: registry.OSLinux}
		b := &beacon.Beacon{Kind: beacon.Kind, Version: beacon.FormatVersion, Host: t.Name, Pass: 9, At: now.Add(-time.Second), IntervalSeconds: 10}
		h := &answeringHost{stopped: map[string]bool{}}
		for j := range m {
			s := registry.Service{Name: fmt.Sprintf("svc%d", j), Unit: fmt.Sprintf("svc%d.service", j), Program: "/bin/sleep", Args: []string{"infinity"}}
			t.Services = append(t.Services, s)
			state := units.StateActive
			if i%10 == 0 && j == 0 {
				state, h.stopped[s.Name] = units.StateInactive, true
			}
			b.Units = append(b.Units, beacon.UnitReport{Service: s.Name, Unit: s.Unit, State: state, PID: 100 + j,
				File: &beacon.FileCheck{Path: "/etc/systemd/system/" + s.Unit}})
		}
		doc.Targets = append(doc.Targets, t)
		view.Beacons[t.Name] = b
		hosts[t.Name] = h
	}
	return doc, view, hosts
}

// BenchmarkPlanThousandHostsTwentyServices is planning alone over 1,000
// hosts × 20 services: the verify results come from a sweep of in-process
// hosts made once, and each op is the beacon join (the read half's rows)
// and Plan. Budget: 200 ms per op.
func BenchmarkPlanThousandHostsTwentyServices(b *testing.B) {
	now := time.Now()
	doc, view, connect := benchFleet(1000, 20, now)
	f := &fleet.Fleet{Doc: doc, Catalog: catalog.Shipped(), Connect: connect}
	vr, err := f.Verify(context.Background(), fleet.VerifyOptions{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		rows := Plan(Input{Doc: doc, Catalog: f.Catalog, Beacons: view.Rows(""), Verify: vr})
		if len(rows) != 20000 {
			b.Fatalf("%d rows", len(rows))
		}
	}
}

// BenchmarkSweepAndPlanThousandHostsTwentyServices adds the verify sweep
// itself to each op: the fleet's fan-out over 1,000 in-process hosts and
// its result handling (no SSH), then the join and Plan.
func BenchmarkSweepAndPlanThousandHostsTwentyServices(b *testing.B) {
	now := time.Now()
	doc, view, connect := benchFleet(1000, 20, now)
	f := &fleet.Fleet{Doc: doc, Catalog: catalog.Shipped(), Connect: connect}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		vr, err := f.Verify(ctx, fleet.VerifyOptions{}, nil)
		if err != nil {
			b.Fatal(err)
		}
		rows := Plan(Input{Doc: doc, Catalog: f.Catalog, Beacons: view.Rows(""), Verify: vr})
		if len(rows) != 20000 {
			b.Fatalf("%d rows", len(rows))
		}
	}
}

func TestTheBenchmarkFleetPlansOneStartPerTenthHost(t *testing.T) {
	now := time.Now()
	doc, view, connect := benchFleet(100, 5, now)
	f := &fleet.Fleet{Doc: doc, Catalog: catalog.Shipped(), Connect: connect}
	vr, err := f.Verify(context.Background(), fleet.VerifyOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := Counts(Plan(Input{Doc: doc, Catalog: f.Catalog, Beacons: view.Rows(""), Verify: vr}))
	if c[ActionStart] != 10 || c[ActionNone] != 490 || len(c) != 2 {
		t.Errorf("counts %v", c)
	}
}

// BenchmarkPlanThousandHostsFromTheStore is a cycle's planning at 1,000
// hosts × 20 services with their beacons in a file store and no host
// behind them but an in-process answer: each op reads the registry, the
// catalog and every beacon from the store, joins them, sweeps (every host
// is asked for reachability only, since each beacon says its units' state
// and drift) and plans, as Runner.plan does. It reports ms/plan; the
// budget is 300 ms (docs/autonomy.md), measured, not asserted.
func BenchmarkPlanThousandHostsFromTheStore(b *testing.B) {
	doc, view, hosts := benchHosts(1000, 20, time.Now())
	st := storeFleet(b, doc, view)
	connect := func(t registry.Target) channel.Host { return hosts[t.Name] }
	r := &Runner{Store: st, Connect: func() (channel.Connector, func()) { return connect, func() {} }}
	ctx := context.Background()
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		v, err := beacon.LoadView(ctx, st, time.Now(), 0)
		if err != nil {
			b.Fatal(err)
		}
		cat, err := catalog.Load(ctx, st)
		if err != nil {
			b.Fatal(err)
		}
		c := &Cycle{}
		if err := r.plan(ctx, c, &fleet.Fleet{Store: st, Doc: v.Document, Meta: v.Meta, Catalog: cat}, v); err != nil {
			b.Fatal(err)
		}
		if n := Counts(c.Rows); len(c.Rows) != 20000 || n[ActionStart] != 100 {
			b.Fatalf("%d rows: %v", len(c.Rows), n)
		}
	}
	b.ReportMetric(float64(time.Since(start).Milliseconds())/float64(b.N), "ms/plan")
}
