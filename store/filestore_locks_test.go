package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/wisent/stado/safefile"
	"github.com/wisent/stado/store"
)

// A Get waits while a writer of its key holds the key's lock (it returns
// that write's outcome), and ends with its context if the lock is never
// let go; other keys are read at once. The store lists and judges its lock
// files, keeping a live one.
func TestGetWaitsForAWriterOfItsKeyOnly(t *testing.T) {
	dir := t.TempDir()
	st, err := store.OpenFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, k := range []string{"releases/a", "releases/b"} {
		if _, err := st.Put(ctx, k, []byte("1"), store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	unlock, err := safefile.Lock(ctx, filepath.Join(dir, ".lock~releases~a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, "releases/b"); err != nil {
		t.Fatalf("another key while a is locked: %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	if _, err := st.Get(short, "releases/a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get of a held key = %v, want it to wait until its context ends", err)
	}
	locks, err := st.Locks()
	if err != nil || len(locks) != 2 || locks[0].Key != "releases/a" || locks[1].Key != "releases/b" {
		t.Fatalf("Locks = %+v, %v", locks, err)
	}
	reps, err := st.ClearStaleLocks(nil, 0)
	if err != nil || len(reps) != 2 || reps[0].State != safefile.LockLive || reps[0].Removed || reps[1].State != safefile.LockFree {
		t.Fatalf("ClearStaleLocks = %+v, %v", reps, err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := st.Get(ctx, "releases/a")
		got <- err
	}()
	unlock()
	if err := <-got; err != nil {
		t.Fatalf("Get after the writer let go: %v", err)
	}
}

// BenchmarkFileStoreGet is one Get of a 4 KiB object whose key has a lock
// file (it has been written), including the shared flock it waits on.
func BenchmarkFileStoreGet(b *testing.B) {
	st, err := store.OpenFileStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := st.Put(ctx, "releases/a", make([]byte, 4096), store.PutOptions{}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := st.Get(ctx, "releases/a"); err != nil {
			b.Fatal(err)
		}
	}
}
