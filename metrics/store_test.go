package metrics

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wisent/stado/store"
	"github.com/wisent/stado/store/storetest"
)

func fileStore(t *testing.T) store.Store {
	t.Helper()
	st, err := store.OpenFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// The decorated store is still a store: the conformance suite every
// backend passes holds through it.
func TestTheInstrumentedStorePassesTheStoreConformanceSuite(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return New(t0).Instrument(fileStore(t)) })
}

// histogram returns the operation's sample count and sum.
func histogram(t *testing.T, m *Host, op string) (uint64, float64) {
	t.Helper()
	return m.storeDuration.sample(op)
}

func TestTheInstrumentedStoreTimesEveryOperationUnderItsName(t *testing.T) {
	m := New(t0)
	clock := t0
	m.now = func() time.Time { c := clock; clock = clock.Add(3 * time.Millisecond); return c }
	st := m.Instrument(fileStore(t))
	ctx := context.Background()
	rev, err := st.Put(ctx, "beacons/h1", []byte(`{}`), store.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CompareAndSwap(ctx, "beacons/h1", []byte(`{"a":1}`), rev, store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, "beacons/h1"); err != nil {
		t.Fatal(err)
	}
	// a bounded read through the package helper is a get too
	if _, err := store.GetBounded(ctx, st, "beacons/h1", 1<<10); err != nil {
		t.Fatal(err)
	}
	// and so is asking for a key's revision alone
	if _, err := store.Revision(ctx, st, "beacons/h1"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.List(ctx, "beacons/"); err != nil {
		t.Fatal(err)
	}
	if err := store.Visit(ctx, st, "beacons/", 2, func(store.Object) {}); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, "beacons/h1"); err != nil {
		t.Fatal(err)
	}
	for op, want := range map[string]uint64{"put": 1, "cas": 1, "get": 3, "list": 1, "visit": 1, "delete": 1} {
		n, sum := histogram(t, m, op)
		if n != want {
			t.Errorf("%s: %d samples, want %d", op, n, want)
		}
		// each operation took one tick of the clock: 3 ms
		if got := sum / float64(n); got < 0.0029 || got > 0.0031 {
			t.Errorf("%s: %v s each, want 0.003", op, got)
		}
	}
}

// alwaysFails is a store whose every operation fails.
type alwaysFails struct{ store.Store }

func (alwaysFails) Get(context.Context, string) (store.Object, error) {
	return store.Object{}, errors.New("connection reset")
}

func TestAnAbsentKeyAndALostSwapAreAnswersNotFailures(t *testing.T) {
	m := New(t0)
	st := m.Instrument(fileStore(t))
	ctx := context.Background()
	if _, err := st.Get(ctx, "beacons/none"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get absent: %v", err)
	}
	if _, err := st.CompareAndSwap(ctx, "beacons/none", []byte(`{}`), 7, store.PutOptions{}); !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("cas on a wrong revision: %v", err)
	}
	for _, op := range []string{"get", "cas"} {
		if got := m.storeFailures.value(op); got != 0 {
			t.Errorf("%s failures %v, want 0", op, got)
		}
	}
	failing := m.Instrument(alwaysFails{fileStore(t)})
	if _, err := failing.Get(ctx, "beacons/h1"); err == nil {
		t.Fatal("the failing store's get succeeded")
	}
	if got := m.storeFailures.value("get"); got != 1 {
		t.Errorf("get failures %v, want 1", got)
	}
}

func TestABoundedReadThroughTheDecoratorStillRefusesWhatIsTooLarge(t *testing.T) {
	m := New(t0)
	st := m.Instrument(fileStore(t))
	ctx := context.Background()
	if _, err := st.Put(ctx, "releases/big", make([]byte, 4096), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	var tl *store.TooLargeError
	if _, err := store.GetBounded(ctx, st, "releases/big", 1024); !errors.As(err, &tl) || tl.Max != 1024 {
		t.Fatalf("bounded get of 4096 bytes under 1024: %v", err)
	}
}
