package beacon

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
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
func (o staticObserver) Loaded(context.Context, map[string]bool) ([]string, error) {
	return o.loaded, nil
}
func (o staticObserver) LastLine(_ context.Context, unit string) (string, error) {
	return "last words of " + unit, nil
}

// failingPuts wraps a real store and refuses writes while fail is set.
type failingPuts struct {
	store.Store
	fail bool
}

func (f *failingPuts) Put(ctx context.Context, key string, v []byte, o store.PutOptions) (int64, error) {
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
	obj, err := st.Get(context.Background(), store.BeaconPrefix+"host1")
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

// fakeTicker is a ticker the test drives: a tick is sent by hand, and the
// send returns only once Run waits for it, that is after the previous
// pass has finished.
type fakeTicker struct {
	ticks    chan time.Time
	interval chan time.Duration // the interval Run asked for
	stopped  chan struct{}
}

func newFakeTicker() *fakeTicker {
	return &fakeTicker{ticks: make(chan time.Time), interval: make(chan time.Duration, 1), stopped: make(chan struct{})}
}

func (f *fakeTicker) new(d time.Duration) (<-chan time.Time, func()) {
	f.interval <- d
	return f.ticks, func() { close(f.stopped) }
}

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

// Run publishes a pass at once and one per tick, each stamped by the
// injected clock, and stops its ticker when ctx ends: an hour-long interval
// costs the test no waiting at all.
func TestRunRunsAPassPerTickOfTheInjectedTicker(t *testing.T) {
	st := newStore(t)
	if _, err := registry.Push(context.Background(), st, fleet(), 0, "test"); err != nil {
		t.Fatal(err)
	}
	const interval = time.Hour
	clock := &fakeClock{now: t0}
	ticker := newFakeTicker()
	r := &Runner{Host: "host1", Store: st, Observer: staticObserver{}, Config: Config{Interval: interval},
		Now: clock.Now, NewTicker: ticker.new}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()

	if got := <-ticker.interval; got != interval {
		t.Fatalf("Run asked for a ticker of %v, want the configured %v", got, interval)
	}
	for pass := 2; pass <= 4; pass++ {
		// The send returns once Run waits again: pass-1 is published.
		ticker.ticks <- clock.advance(interval)
	}
	b := waitForPass(t, st, 4)
	cancel() // Run is done with pass 4 and waits for a tick that never comes
	if err := <-done; err != nil {
		t.Fatalf("Run = %v, want nil after cancel", err)
	}
	select {
	case <-ticker.stopped:
	default:
		t.Fatal("Run returned without stopping its ticker")
	}
	if want := t0.Add(3 * interval); !b.At.Equal(want) || b.IntervalSeconds != interval.Seconds() {
		t.Fatalf("pass 4 at %v (interval %vs), want %v: each pass reads the injected clock", b.At, b.IntervalSeconds, want)
	}
	if b, _ := readBeacon(st); b.Pass != 4 {
		t.Fatalf("after cancel the store holds pass %d, want 4: no pass runs once ctx ends", b.Pass)
	}
}

// waitForPass polls the store until host1's beacon reaches pass n.
func waitForPass(t *testing.T, st store.Store, n int64) Beacon {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := readBeacon(st)
		if err == nil && b.Pass >= n {
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("no beacon of pass %d within 10s (last: pass %d, %v)", n, b.Pass, err)
		}
		time.Sleep(time.Millisecond)
	}
}

func readBeacon(st store.Store) (Beacon, error) {
	var b Beacon
	obj, err := st.Get(context.Background(), store.BeaconPrefix+"host1")
	if err != nil {
		return b, err
	}
	err = json.Unmarshal(obj.Value, &b)
	return b, err
}
