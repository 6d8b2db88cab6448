package safefile_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wisent/stado/safefile"
)

// Writers increment a counter file under the lock while a cleaner removes
// the lock file every millisecond (holding the lock while it removes it,
// which is how a lock file may be removed). A waiter that opened the file
// before it was removed must not enter beside a newcomer that created the
// next one: no increment may be lost. Each attempt pauses up to 200µs
// between opening the file and trying its lock, so removals land in that
// window often (without the pause a lost increment is too rare to show).
func TestLockSurvivesLockFileDeletion(t *testing.T) {
	defer safefile.SetOpenedHook(func() {
		time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
	})()
	dir := t.TempDir()
	data := filepath.Join(dir, "counter")
	lock := data + ".lock"
	if err := safefile.Write(data, []byte("0"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const writers, each = 8, 40
	var removed atomic.Int64
	stop := make(chan struct{})
	cleaned := make(chan struct{})
	go func() {
		defer close(cleaned)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			unlock, err := safefile.Lock(ctx, lock)
			if err != nil {
				t.Error(err)
				return
			}
			if os.Remove(lock) == nil {
				removed.Add(1)
			}
			unlock()
		}
	}()

	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if err := increment(ctx, data, lock); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-cleaned

	b, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); got != strconv.Itoa(writers*each) {
		t.Fatalf("counter = %s, want %d (%d lock files removed meanwhile)", got, writers*each, removed.Load())
	}
	if removed.Load() == 0 {
		t.Fatal("the cleaner removed no lock file; the test proved nothing")
	}
	t.Logf("%d increments, %d lock files removed meanwhile", writers*each, removed.Load())
}

// increment reads the counter at data, adds one and replaces the file,
// holding the lock at lock throughout.
func increment(ctx context.Context, data, lock string) error {
	unlock, err := safefile.Lock(ctx, lock)
	if err != nil {
		return err
	}
	defer unlock()
	b, err := os.ReadFile(data)
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return err
	}
	return safefile.Write(data, []byte(strconv.Itoa(n+1)), 0o600)
}

func TestTryLockRefusesAHeldLockAtOnce(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := safefile.TryLock(lock)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := safefile.TryLock(lock); !errors.Is(err, safefile.ErrLocked) {
		t.Fatalf("second TryLock = %v, want ErrLocked", err)
	}
	unlock()
	again, err := safefile.TryLock(lock)
	if err != nil {
		t.Fatalf("TryLock after unlock = %v", err)
	}
	again()
}

func TestLockWaitEndsWithItsContext(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := safefile.Lock(context.Background(), lock)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := safefile.Lock(ctx, lock); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock on a held lock = %v, want context.DeadlineExceeded", err)
	}
}

// A waiter gets the lock as soon as the holder lets go.
func TestLockIsTakenOnceTheHolderReleasesIt(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := safefile.Lock(context.Background(), lock)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		u, err := safefile.Lock(context.Background(), lock)
		if err == nil {
			u()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("Lock returned %v while the lock was held", err)
	case <-time.After(10 * time.Millisecond):
	}
	unlock()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

func TestLockInMissingDirectoryFails(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "missing", "x.lock")
	if _, err := safefile.Lock(context.Background(), lock); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Lock = %v, want a not-exist error", err)
	}
}
