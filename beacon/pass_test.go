package beacon

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/wisent/stado/registry"
)

// staticObserver stands in for the init system (which only runs in the
// testbed); it lets the runner's own logic be tested here.
type staticObserver struct {
	states map[string]UnitReport
	loaded []string
}

func (o staticObserver) Observe(_ context.Context, names []string) ([]UnitReport, error) {
	out := make([]UnitReport, len(names))
	for i, n := range names {
		r, ok := o.states[n]
		if !ok {
			r = UnitReport{Unit: n, State: StateMissing}
		}
		out[i] = r
	}
	return out, nil
}
func (o staticObserver) Loaded(context.Context) ([]string, error) { return o.loaded, nil }
func (o staticObserver) LastLine(_ context.Context, unit string) (string, error) {
	return "last words of " + unit, nil
}

// failingPuts wraps a real store and refuses writes while fail is set.
type failingPuts struct {
	registry.Store
	fail bool
}

func (f *failingPuts) Put(ctx context.Context, key string, v []byte, o registry.PutOptions) (int64, error) {
	if f.fail {
		return 0, errors.New("disk full")
	}
	return f.Store.Put(ctx, key, v, o)
}

type countingContributor struct{ n int }

func (c *countingContributor) Contribute(_ context.Context, p *Pass) {
	c.n++
	if u := p.Unit("web"); u != nil {
		u.Answering = &Answering{State: AnswerAsked}
	}
}

func TestPassReportsDeclaredAndUndeclaredUnitsAndCallsContributors(t *testing.T) {
	st := newStore(t)
	if _, err := registry.Push(context.Background(), st, fleet(), 0, "test"); err != nil {
		t.Fatal(err)
	}
	obs := staticObserver{
		states: map[string]UnitReport{
			"web.service":   {Unit: "web.service", State: StateActive, PID: 10},
			"old.service":   {Unit: "old.service", State: StateFailing, LastExit: exit(3), Starts: 4},
			"stray.service": {Unit: "stray.service", State: StateActive, PID: 11},
		},
		loaded: []string{"web.service", "old.service", "stray.service"},
	}
	c := &countingContributor{}
	r := &Runner{Host: "host1", Store: st, Observer: obs, Contributors: []Contributor{c}, Config: Config{Interval: time.Second}, Now: func() time.Time { return t0 }}
	b, err := r.RunPass(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if c.n != 1 || b.Pass != 1 || len(b.Units) != 2 || len(b.Undeclared) != 1 || b.StaleAfterSeconds != 3 {
		t.Fatalf("beacon %+v (contributor calls %d)", b, c.n)
	}
	if b.Units[0].Answering == nil || b.Units[1].LastStderr != "last words of old.service" {
		t.Fatalf("units %+v", b.Units)
	}
	obj, err := st.Get(context.Background(), registry.BeaconPrefix+"host1")
	if err != nil {
		t.Fatal(err)
	}
	var stored Beacon
	if err := json.Unmarshal(obj.Value, &stored); err != nil || stored.Pass != 1 || stored.Kind != Kind {
		t.Fatalf("stored beacon %+v, %v", stored, err)
	}
}

func TestUnwritableStoreIsARefusalInTheNextBeaconNotACrash(t *testing.T) {
	base := newStore(t)
	if _, err := registry.Push(context.Background(), base, fleet(), 0, "test"); err != nil {
		t.Fatal(err)
	}
	st := &failingPuts{Store: base, fail: true}
	r := &Runner{Host: "host1", Store: st, Observer: staticObserver{}, Config: Config{Interval: time.Second}}
	if _, err := r.RunPass(context.Background()); err == nil {
		t.Fatal("first pass: want the publish error")
	}
	st.fail = false
	b, err := r.RunPass(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ref := range b.Refusals {
		if ref.Code == "store_unwritable" {
			found = true
		}
	}
	if !found || b.Pass != 2 {
		t.Fatalf("second beacon lacks the store refusal: %+v", b.Refusals)
	}
}

func TestUndeclaredHostIsARefusal(t *testing.T) {
	st := newStore(t)
	if _, err := registry.Push(context.Background(), st, fleet(), 0, "test"); err != nil {
		t.Fatal(err)
	}
	r := &Runner{Host: "host9", Store: st, Observer: staticObserver{}}
	b, _ := r.RunPass(context.Background())
	if len(b.Refusals) == 0 || b.Refusals[0].Code != "host_not_declared" {
		t.Fatalf("refusals %+v", b.Refusals)
	}
}

func TestCloneWithAnotherMachineIDIsReportedAsIdentityConflict(t *testing.T) {
	st := newStore(t)
	if _, err := registry.Push(context.Background(), st, fleet(), 0, "test"); err != nil {
		t.Fatal(err)
	}
	a := &Runner{Host: "host1", Store: st, Observer: staticObserver{}, Identity: Identity{Hostname: "a", MachineID: "m1", PID: 1, Started: t0}, Now: func() time.Time { return t0 }}
	b := &Runner{Host: "host1", Store: st, Observer: staticObserver{}, Identity: Identity{Hostname: "b", MachineID: "m2", PID: 2, Started: t0}, Now: func() time.Time { return t0.Add(time.Second) }}
	if _, err := a.RunPass(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, _ := b.RunPass(context.Background())
	for _, ref := range got.Refusals {
		if ref.Code == "identity_conflict" {
			return
		}
	}
	t.Fatalf("no identity_conflict in %+v", got.Refusals)
}
