package beacon

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

// recordingContributor keeps the document every pass was handed.
type recordingContributor struct{ docs []*registry.Document }

func (c *recordingContributor) Contribute(_ context.Context, p *Pass) {
	c.docs = append(c.docs, p.Document)
}

func TestTheRegistryIsDecodedAgainOnlyWhenItsRevisionChanges(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	meta, err := registry.Push(ctx, st, fleet(), 0, "test")
	if err != nil {
		t.Fatal(err)
	}
	c := &recordingContributor{}
	r := &Runner{Host: "host1", Store: st, Observer: staticObserver{}, Contributors: []Contributor{c}, Now: func() time.Time { return t0 }}
	for i := 0; i < 2; i++ {
		if _, err := r.RunPass(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// an unchanged registry: the second pass reads the first pass's document
	if c.docs[0] != c.docs[1] {
		t.Fatal("the registry was decoded again though its revision did not change")
	}
	d := fleet()
	d.Targets[0].Services = d.Targets[0].Services[:1]
	if _, err := registry.Push(ctx, st, d, meta.Revision, "one service less"); err != nil {
		t.Fatal(err)
	}
	b, err := r.RunPass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// a new revision: the third pass decodes it and reports what it declares
	if c.docs[2] == c.docs[1] || len(b.Units) != 1 {
		t.Fatalf("the third pass kept the old document (units %+v)", b.Units)
	}
}

func TestAnotherMachinesBeaconBetweenTwoPassesIsAnIdentityConflict(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	if _, err := registry.Push(ctx, st, fleet(), 0, "test"); err != nil {
		t.Fatal(err)
	}
	clock := t0
	a := &Runner{Host: "host1", Store: st, Observer: staticObserver{}, Identity: Identity{Hostname: "a", MachineID: "m1", PID: 1, Started: t0}, Now: func() time.Time { return clock }}
	b := &Runner{Host: "host1", Store: st, Observer: staticObserver{}, Identity: Identity{Hostname: "b", MachineID: "m2", PID: 2, Started: t0}, Now: func() time.Time { return clock }}
	for _, r := range []*Runner{a, b, a} {
		clock = clock.Add(time.Second)
		got, _ := r.RunPass(ctx)
		if r == a && got.Pass == 2 {
			for _, ref := range got.Refusals {
				if ref.Code == "identity_conflict" {
					return
				}
			}
			t.Fatalf("no identity_conflict in %+v", got.Refusals)
		}
	}
}

// BenchmarkPass is one pass of the host process as its runner does it on
// a file store: a 100-target registry (the fleet every host reads) whose
// target here declares 20 services, 60 undeclared loaded units, the
// identity check and the publication. The init system is a static
// observer; `go test -bench Pass -benchmem ./beacon` reports the
// allocations of a pass (docs/bench.md, the host process).
func BenchmarkPass(b *testing.B) {
	ctx := context.Background()
	st, err := store.OpenFileStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	d := &registry.Document{Version: 1}
	obs := staticObserver{states: map[string]UnitReport{}}
	for h := 1; h <= 100; h++ {
		tg := registry.Target{Name: fmt.Sprintf("host%d", h), SSH: registry.SSH{Address: fmt.Sprintf("127.0.1.%d", h)}, OS: "linux"}
		for s := 1; s <= 20; s++ {
			tg.Services = append(tg.Services, registry.Service{Name: fmt.Sprintf("svc%02d", s), Unit: fmt.Sprintf("svc%02d.service", s), Program: "/bin/sleep", Args: []string{"infinity"}})
		}
		d.Targets = append(d.Targets, tg)
	}
	for s := 1; s <= 20; s++ {
		u := fmt.Sprintf("svc%02d.service", s)
		obs.states[u] = UnitReport{Unit: u, State: StateActive, Sub: "running", PID: 100 + s, Starts: 1}
		obs.loaded = append(obs.loaded, u)
	}
	for i := 0; i < 60; i++ {
		u := fmt.Sprintf("system-unit-%02d.service", i)
		obs.states[u] = UnitReport{Unit: u, State: StateActive, Sub: "running", PID: 200 + i, Starts: 1}
		obs.loaded = append(obs.loaded, u)
	}
	if _, err := registry.Push(ctx, st, d, 0, "bench"); err != nil {
		b.Fatal(err)
	}
	r := &Runner{Host: "host1", Store: st, Observer: obs, Identity: Identity{Hostname: "host1", MachineID: "m1", PID: 1, Started: t0}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := r.RunPass(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
