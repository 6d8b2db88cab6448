// Package storetest is the conformance suite every store.Store
// backend passes unchanged. It assumes only what the Store contract
// promises: revisions are positive and grow with every write of a key (not
// that they start at 1 or grow by exactly 1), expiry happens some time
// after the TTL, and List is sorted by key.
//
// It imports store and the standard library only.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wisent/stado/store"
)

// Run runs the suite. open returns a fresh, empty store for each subtest;
// the suite closes it.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	t.Helper()
	fresh := func(t *testing.T) store.Store {
		t.Helper()
		st := open(t)
		t.Cleanup(func() { st.Close() })
		return st
	}
	ctx := context.Background()

	t.Run("GetOfAbsentKeyIsNotFound", func(t *testing.T) {
		st := fresh(t)
		_, err := st.Get(ctx, "nothing/here")
		if !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get absent: err = %v, want ErrNotFound", err)
		}
	})

	t.Run("CreateOnlyWritesOnceThenConflicts", func(t *testing.T) {
		st := fresh(t)
		rev, err := st.CompareAndSwap(ctx, "a/b", []byte("one"), 0, store.PutOptions{})
		if err != nil || rev <= 0 {
			t.Fatalf("create: rev %d, err %v; want a positive revision", rev, err)
		}
		_, err = st.CompareAndSwap(ctx, "a/b", []byte("two"), 0, store.PutOptions{})
		var ce *store.ConflictError
		if !errors.As(err, &ce) || !errors.Is(err, store.ErrConflict) {
			t.Fatalf("second create: err = %v, want *ConflictError wrapping ErrConflict", err)
		}
		if ce.Want != 0 || ce.Got != rev || ce.Key != "a/b" {
			t.Fatalf("conflict = %+v, want Key a/b Want 0 Got %d", ce, rev)
		}
		obj := mustGet(t, st, "a/b")
		if string(obj.Value) != "one" || obj.Revision != rev {
			t.Fatalf("after lost create: %q rev %d, want %q rev %d", obj.Value, obj.Revision, "one", rev)
		}
	})

	t.Run("CompareAndSwapAgainstCurrentRevisionGrowsIt", func(t *testing.T) {
		st := fresh(t)
		rev := mustCAS(t, st, "k", "v1", 0)
		rev2 := mustCAS(t, st, "k", "v2", rev)
		if rev2 <= rev {
			t.Fatalf("revision %d after %d, want growth", rev2, rev)
		}
		obj := mustGet(t, st, "k")
		if string(obj.Value) != "v2" || obj.Revision != rev2 {
			t.Fatalf("got %q rev %d, want v2 rev %d", obj.Value, obj.Revision, rev2)
		}
	})

	t.Run("CompareAndSwapAgainstStaleRevisionConflictsAndChangesNothing", func(t *testing.T) {
		st := fresh(t)
		rev := mustCAS(t, st, "k", "v1", 0)
		rev2 := mustCAS(t, st, "k", "v2", rev)
		for _, stale := range []int64{rev, rev2 + 1000} {
			_, err := st.CompareAndSwap(ctx, "k", []byte("v3"), stale, store.PutOptions{})
			var ce *store.ConflictError
			if !errors.As(err, &ce) {
				t.Fatalf("CAS expecting %d: err = %v, want *ConflictError", stale, err)
			}
			if ce.Want != stale || ce.Got != rev2 {
				t.Fatalf("conflict = %+v, want Want %d Got %d", ce, stale, rev2)
			}
		}
		if obj := mustGet(t, st, "k"); string(obj.Value) != "v2" || obj.Revision != rev2 {
			t.Fatalf("after conflicts: %q rev %d, want v2 rev %d", obj.Value, obj.Revision, rev2)
		}
	})

	t.Run("CompareAndSwapOnAbsentKeyWithNonZeroExpectationConflicts", func(t *testing.T) {
		st := fresh(t)
		_, err := st.CompareAndSwap(ctx, "k", []byte("v"), 7, store.PutOptions{})
		var ce *store.ConflictError
		if !errors.As(err, &ce) || ce.Got != 0 || ce.Want != 7 {
			t.Fatalf("err = %v, want *ConflictError Want 7 Got 0", err)
		}
		if _, err := st.Get(ctx, "k"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get after refused CAS: %v, want ErrNotFound", err)
		}
	})

	t.Run("PutWritesUnconditionallyAndGrowsRevision", func(t *testing.T) {
		st := fresh(t)
		r1, err := st.Put(ctx, "p", []byte("1"), store.PutOptions{})
		if err != nil || r1 <= 0 {
			t.Fatalf("Put absent: %d %v", r1, err)
		}
		r2, err := st.Put(ctx, "p", []byte("2"), store.PutOptions{})
		if err != nil || r2 <= r1 {
			t.Fatalf("Put again: %d %v, want > %d", r2, err, r1)
		}
		if obj := mustGet(t, st, "p"); string(obj.Value) != "2" || obj.Revision != r2 {
			t.Fatalf("got %q rev %d", obj.Value, obj.Revision)
		}
	})

	t.Run("RevisionIsTheRevisionGetReadsWithoutTheValue", func(t *testing.T) {
		st := fresh(t)
		if _, err := store.Revision(ctx, st, "r"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Revision absent: err = %v, want ErrNotFound", err)
		}
		r1, err := st.Put(ctx, "r", []byte("1"), store.PutOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := store.Revision(ctx, st, "r"); err != nil || got != r1 {
			t.Fatalf("Revision after Put: %d %v, want %d", got, err, r1)
		}
		r2, err := st.Put(ctx, "r", []byte("2"), store.PutOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := store.Revision(ctx, st, "r"); err != nil || got != r2 || got != mustGet(t, st, "r").Revision {
			t.Fatalf("Revision after a second Put: %d %v, want %d", got, err, r2)
		}
		if err := st.Delete(ctx, "r"); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Revision(ctx, st, "r"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Revision deleted: err = %v, want ErrNotFound", err)
		}
	})

	t.Run("ValuesRoundTripByteForByte", func(t *testing.T) {
		st := fresh(t)
		// Cases: empty value, binary with NUL and newlines, a larger value.
		values := map[string][]byte{
			"v/empty":  {},
			"v/binary": {0, 1, '\n', 0xff, '\r', 0, 'x'},
			"v/large":  bytes.Repeat([]byte("0123456789abcdef"), 64*1024),
		}
		for k, v := range values {
			if _, err := st.Put(ctx, k, v, store.PutOptions{}); err != nil {
				t.Fatalf("Put %s: %v", k, err)
			}
		}
		for k, v := range values {
			if obj := mustGet(t, st, k); !bytes.Equal(obj.Value, v) {
				t.Fatalf("%s: value differs (%d bytes, want %d)", k, len(obj.Value), len(v))
			}
		}
	})

	t.Run("ListReturnsPrefixMatchesSortedByKey", func(t *testing.T) {
		st := fresh(t)
		keys := []string{"beacons/host2", "beacons/host1", "beacons/host10", "beaconsx", "registry/document", "beacons/a b/ü%~x"}
		revs := map[string]int64{}
		for _, k := range keys {
			revs[k] = mustCAS(t, st, k, "value of "+k, 0)
		}
		got, err := st.List(ctx, "beacons/")
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"beacons/a b/ü%~x", "beacons/host1", "beacons/host10", "beacons/host2"}
		if len(got) != len(want) {
			t.Fatalf("List beacons/ = %v, want %v", objKeys(got), want)
		}
		for i, obj := range got {
			if obj.Key != want[i] || string(obj.Value) != "value of "+want[i] || obj.Revision != revs[want[i]] {
				t.Fatalf("List[%d] = %q %q rev %d, want %q", i, obj.Key, obj.Value, obj.Revision, want[i])
			}
		}
		all, err := st.List(ctx, "")
		if err != nil || len(all) != len(keys) {
			t.Fatalf("List all = %v, %v; want %d objects", objKeys(all), err, len(keys))
		}
		for i := 1; i < len(all); i++ {
			if all[i-1].Key >= all[i].Key {
				t.Fatalf("List all not sorted: %v", objKeys(all))
			}
		}
		none, err := st.List(ctx, "nothing/")
		if err != nil || len(none) != 0 {
			t.Fatalf("List nothing/ = %v, %v; want empty", objKeys(none), err)
		}
	})

	t.Run("KeysAreListsKeysWithoutTheValues", func(t *testing.T) {
		st := fresh(t)
		if _, ok := st.(store.KeyLister); !ok {
			t.Fatalf("%T lists no keys without their values (store.KeyLister)", st)
		}
		for i := 0; i < 250; i++ { // several pages of any backend's
			mustCAS(t, st, fmt.Sprintf("cycles/c%03d", i), strings.Repeat("v", 1000), 0)
		}
		mustCAS(t, st, "cyclesx", "not under the prefix", 0)
		mustCAS(t, st, "cycles/a b/ü%~x", "odd key", 0)
		if err := st.Delete(ctx, "cycles/c007"); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Put(ctx, "cycles/ttl", []byte("goes"), store.PutOptions{TTL: time.Second}); err != nil {
			t.Fatal(err)
		}
		for _, prefix := range []string{"cycles/", "", "nothing/"} {
			listed, err := st.List(ctx, prefix)
			if err != nil {
				t.Fatal(err)
			}
			keys, err := store.Keys(ctx, st, prefix)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(keys) != fmt.Sprint(objKeys(listed)) {
				t.Fatalf("Keys %q = %d keys, List %d (or they differ)", prefix, len(keys), len(listed))
			}
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			keys, err := store.Keys(ctx, st, "cycles/t")
			if err != nil {
				t.Fatal(err)
			}
			if len(keys) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("an object with a 1s TTL is still among the keys after 30s: %v", keys)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if _, err := store.Keys(ctx, st, "a/../b"); !errors.Is(err, store.ErrInvalidKey) {
			t.Fatalf("Keys of a climbing prefix: %v, want ErrInvalidKey", err)
		}
	})

	t.Run("VisitHandsOnExactlyWhatListReturns", func(t *testing.T) {
		st := fresh(t)
		for i := 0; i < 250; i++ { // several pages of any backend's
			mustCAS(t, st, fmt.Sprintf("beacons/h%03d", i), strings.Repeat(strconv.Itoa(i), 50), 0)
		}
		mustCAS(t, st, "beaconsx", "not under the prefix", 0)
		mustCAS(t, st, "other/k", "elsewhere", 0)
		if err := st.Delete(ctx, "beacons/h007"); err != nil {
			t.Fatal(err)
		}
		listed, err := st.List(ctx, "beacons/")
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{}
		for _, o := range listed {
			want[o.Key] = fmt.Sprintf("%d %s", o.Revision, o.Value)
		}
		for _, workers := range []int{1, 4} {
			var mu sync.Mutex
			got := map[string]string{}
			err := store.Visit(ctx, st, "beacons/", workers, func(o store.Object) {
				v := fmt.Sprintf("%d %s", o.Revision, o.Value) // Value is only valid now
				mu.Lock()
				defer mu.Unlock()
				if _, twice := got[o.Key]; twice {
					t.Errorf("%s handed on twice", o.Key)
				}
				got[o.Key] = v
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 249 || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%d workers: visited %d objects, listed %d, or they differ", workers, len(got), len(want))
			}
		}
		done, cancel := context.WithCancel(ctx)
		cancel()
		if err := store.Visit(done, st, "beacons/", 2, func(store.Object) {}); err == nil {
			t.Error("a visit with an ended context reported no error")
		}
	})

	t.Run("BoundedReadsRefuseAValueOverTheBoundAndPassOneAtIt", func(t *testing.T) {
		st := fresh(t)
		const bound = 200 << 10 // above etcd's compression threshold: a compressed value is judged expanded
		mustCAS(t, st, "beacons/at", strings.Repeat("a", bound), 0)
		mustCAS(t, st, "beacons/over", strings.Repeat("b", bound+1), 0)
		if o, err := store.GetBounded(ctx, st, "beacons/at", bound); err != nil || len(o.Value) != bound {
			t.Fatalf("a value at the bound: %d bytes, %v", len(o.Value), err)
		}
		var big *store.TooLargeError
		_, err := store.GetBounded(ctx, st, "beacons/over", bound)
		if !errors.As(err, &big) || big.Key != "beacons/over" || big.Max != bound || !errors.Is(err, store.ErrTooLarge) {
			t.Fatalf("a value one byte over the bound: %v", err)
		}
		var mu sync.Mutex
		var read, refused []string
		err = store.VisitBounded(ctx, st, "beacons/", 2, bound, func(o store.Object) {
			mu.Lock()
			defer mu.Unlock()
			read = append(read, o.Key)
		}, func(e *store.TooLargeError) {
			mu.Lock()
			defer mu.Unlock()
			refused = append(refused, e.Key)
		})
		if err != nil || fmt.Sprint(read) != "[beacons/at]" || fmt.Sprint(refused) != "[beacons/over]" {
			t.Fatalf("bounded visit read %v, refused %v: %v", read, refused, err)
		}
	})

	t.Run("DeleteRemovesAndRecreateContinuesAbove", func(t *testing.T) {
		st := fresh(t)
		rev := mustCAS(t, st, "d/k", "v", 0)
		rev = mustCAS(t, st, "d/k", "v2", rev)
		if err := st.Delete(ctx, "d/k"); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		if _, err := st.Get(ctx, "d/k"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get after Delete: %v, want ErrNotFound", err)
		}
		if objs, _ := st.List(ctx, "d/"); len(objs) != 0 {
			t.Fatalf("List after Delete = %v, want empty", objKeys(objs))
		}
		if err := st.Delete(ctx, "d/k"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("second Delete: %v, want ErrNotFound", err)
		}
		if err := st.Delete(ctx, "d/never"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Delete of never-written key: %v, want ErrNotFound", err)
		}
		again := mustCAS(t, st, "d/k", "v3", 0)
		if again <= rev {
			t.Fatalf("recreated at revision %d, want above %d", again, rev)
		}
	})

	t.Run("InvalidKeysAreRefused", func(t *testing.T) {
		st := fresh(t)
		// Each key breaks one rule of the key grammar.
		for _, k := range []string{"", "/lead", "trail/", "a//b", "a/../b", "..", "a/./b", "nul\x00byte", string(bytes.Repeat([]byte("k"), store.MaxKeyLength+1))} {
			if _, err := st.Put(ctx, k, []byte("x"), store.PutOptions{}); !errors.Is(err, store.ErrInvalidKey) {
				t.Errorf("Put %q: err = %v, want ErrInvalidKey", k, err)
			}
			if _, err := st.Get(ctx, k); !errors.Is(err, store.ErrInvalidKey) {
				t.Errorf("Get %q: err = %v, want ErrInvalidKey", k, err)
			}
		}
	})

	t.Run("ObjectWithTTLExpiresAndIsNotListed", func(t *testing.T) {
		st := fresh(t)
		if _, err := st.Put(ctx, "ttl/long", []byte("stays"), store.PutOptions{TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
		rev, err := st.Put(ctx, "ttl/short", []byte("goes"), store.PutOptions{TTL: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			_, err := st.Get(ctx, "ttl/short")
			if errors.Is(err, store.ErrNotFound) {
				break
			}
			if err != nil {
				t.Fatalf("Get ttl/short: %v", err)
			}
			if time.Now().After(deadline) {
				t.Fatal("object with a 1s TTL still readable after 30s")
			}
			time.Sleep(100 * time.Millisecond)
		}
		objs, err := st.List(ctx, "ttl/")
		if err != nil || len(objs) != 1 || objs[0].Key != "ttl/long" {
			t.Fatalf("List ttl/ = %v, %v; want only ttl/long", objKeys(objs), err)
		}
		// An expired key has no revision either.
		if _, err := store.Revision(ctx, st, "ttl/short"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Revision of an expired key: err = %v, want ErrNotFound", err)
		}
		// An expired key is absent: create-only succeeds above its old revision.
		again := mustCAS(t, st, "ttl/short", "back", 0)
		if again <= rev {
			t.Fatalf("recreated at %d, want above %d", again, rev)
		}
	})

	t.Run("ConcurrentCompareAndSwapLosesNoUpdate", func(t *testing.T) {
		st := fresh(t)
		const workers, each = 16, 20
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < each; i++ {
					if err := increment(cctx, st, "counter"); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		obj := mustGet(t, st, "counter")
		if string(obj.Value) != strconv.Itoa(workers*each) {
			t.Fatalf("counter = %s, want %d", obj.Value, workers*each)
		}
	})
}

// increment adds one to the decimal counter at key with a read and a
// compare-and-swap, retrying on conflict until ctx ends.
func increment(ctx context.Context, st store.Store, key string) error {
	for {
		var n int
		var expect int64
		obj, err := st.Get(ctx, key)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return err
		default:
			if n, err = strconv.Atoi(string(obj.Value)); err != nil {
				return fmt.Errorf("counter holds %q", obj.Value)
			}
			expect = obj.Revision
		}
		_, err = st.CompareAndSwap(ctx, key, []byte(strconv.Itoa(n+1)), expect, store.PutOptions{})
		if err == nil {
			return nil
		}
		if !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
}

func mustGet(t *testing.T, st store.Store, key string) store.Object {
	t.Helper()
	obj, err := st.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("Get %s: %v", key, err)
	}
	if obj.Key != key {
		t.Fatalf("Get %s returned key %q", key, obj.Key)
	}
	return obj
}

func mustCAS(t *testing.T, st store.Store, key, value string, expect int64) int64 {
	t.Helper()
	rev, err := st.CompareAndSwap(context.Background(), key, []byte(value), expect, store.PutOptions{})
	if err != nil {
		t.Fatalf("CAS %s expecting %d: %v", key, expect, err)
	}
	if rev <= expect {
		t.Fatalf("CAS %s: revision %d not above %d", key, rev, expect)
	}
	return rev
}

func objKeys(objs []store.Object) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.Key
	}
	return out
}
