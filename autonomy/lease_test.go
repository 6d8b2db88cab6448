package autonomy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/store"
	etcdtest "github.com/wisent/stado/tests/etcd"

	_ "github.com/wisent/stado/store/etcdstore"
)

func fileStore(t testing.TB) store.Store {
	t.Helper()
	st, err := store.OpenFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestLeaseOnTheFileStore(t *testing.T) {
	st := fileStore(t)
	leaseBehaviour(t, st, st)
}

func TestLeaseOnEtcd(t *testing.T) {
	c := etcdtest.Start(t, 1)
	var eps []string
	for _, e := range c.Endpoints() {
		eps = append(eps, strings.TrimPrefix(e, "http://"))
	}
	open := func() store.Store {
		st, err := store.Open(context.Background(), fmt.Sprintf("etcd://%s/lease-test", strings.Join(eps, ",")))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	// Two clients, as two enforcer processes would be.
	leaseBehaviour(t, open(), open())
}

// leaseBehaviour: one holder at a time; the second is refused naming the
// first; the holder's renewals keep it past its TTL; released, it is free;
// a holder that stops renewing (as a SIGKILLed one does) loses it once its
// TTL has run out.
func leaseBehaviour(t *testing.T, st1, st2 store.Store) {
	ctx := context.Background()
	ttl := MinLeaseTTL
	a := NewHolder(time.Now(), ttl)
	la, err := Acquire(ctx, st1, a, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := NewHolder(time.Now(), ttl)
	b.PID++
	_, err = Acquire(ctx, st2, b, nil)
	var held *LeaseHeldError
	if !errors.As(err, &held) || held.Holder.Token != a.Token || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", a.PID)) {
		t.Fatalf("second enforcer: %v", err)
	}
	// Renewed every third of the TTL, the lease outlives two TTLs.
	time.Sleep(2 * ttl)
	if _, err := Acquire(ctx, st2, b, nil); !errors.As(err, &held) {
		t.Fatalf("after two TTLs of renewals: %v", err)
	}
	if la.Lost() != nil {
		t.Fatal(la.Lost())
	}
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	lb, err := Acquire(ctx, st2, b, nil)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	// b stops renewing without releasing: its record stays until the TTL
	// runs out, then a is let in.
	close(lb.stop)
	<-lb.done
	if _, err := Acquire(ctx, st1, a, nil); !errors.As(err, &held) || held.Holder.Token != b.Token {
		t.Fatalf("right after the holder stopped renewing: %v", err)
	}
	deadline := time.Now().Add(3 * ttl)
	for {
		l, err := Acquire(ctx, st1, a, nil)
		if err == nil {
			l.Release(ctx)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dead holder's lease never expired: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// saveFiveKeepingThree saves five one-row cycles a minute apart (service
// "0" to "4"), keeping the history to three.
func saveFiveKeepingThree(t *testing.T, st store.Store) {
	t.Helper()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 5 {
		c := &Cycle{Mode: "report", Start: t0.Add(time.Duration(i) * time.Minute), Rows: []Row{{Host: "h", Service: fmt.Sprint(i), Action: ActionNone}}}
		if err := Save(context.Background(), st, c, 3); err != nil {
			t.Fatal(err)
		}
	}
}

func TestHistoryKeepsTheNewestCyclesNewestFirst(t *testing.T) {
	st := fileStore(t)
	ctx := context.Background()
	saveFiveKeepingThree(t, st)
	cs, err := History(ctx, st, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 3 || cs[0].Rows[0].Service != "4" || cs[2].Rows[0].Service != "2" {
		t.Fatalf("%+v", cs)
	}
	if one, _ := History(ctx, st, 1); len(one) != 1 || one[0].ID != cs[0].ID {
		t.Fatalf("latest: %+v", one)
	}
}

// Keeping the history to its limit reads the stored cycles' keys, never
// their records (each one a row per declared service).
func TestSavingACycleTrimsTheHistoryWithoutReadingTheStoredCycles(t *testing.T) {
	st := &keysOnlyStore{FileStore: fileStore(t).(*store.FileStore)}
	ctx := context.Background()
	saveFiveKeepingThree(t, st)
	if st.lists != 0 {
		t.Errorf("saving read the stored cycles %d times", st.lists)
	}
	if keys, _ := store.Keys(ctx, st, CyclePrefix); len(keys) != 3 {
		t.Fatalf("the history kept %v, want the newest 3", keys)
	}
}

// keysOnlyStore is a file store that counts the listings that read values.
type keysOnlyStore struct {
	*store.FileStore
	lists int
}

func (s *keysOnlyStore) List(ctx context.Context, prefix string) ([]store.Object, error) {
	s.lists++
	return s.FileStore.List(ctx, prefix)
}
