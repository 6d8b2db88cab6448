package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/safefile"
	"github.com/wisent/stado/store"
)

// Sixteen writers, each with a store of its own (so each takes its own
// flock, as separate processes do), run eight cycles of pull, modify and
// push with the revision they pulled, while a cleaner does something to the
// store's lock files every 2 ms, as tmpfiles cleaners and clean-up scripts
// do. Every acknowledged push must be in the final document, and no
// revision may be acknowledged twice.
func TestAcknowledgedPushesSurviveLockFileRemoval(t *testing.T) {
	for _, tc := range []struct {
		name  string
		clean func(t *testing.T, lock string) bool // reports a lock file it touched
	}{
		// removed without holding it, as a tmpfiles cleaner does
		{"removed unlocked", func(_ *testing.T, lock string) bool { return os.Remove(lock) == nil }},
		// removed by someone who holds it
		{"removed while held", func(t *testing.T, lock string) bool {
			unlock, err := safefile.TryLock(lock)
			if err != nil {
				return false
			}
			defer unlock()
			return os.Remove(lock) == nil
		}},
		// replaced by another file through a rename
		{"replaced by rename", func(_ *testing.T, lock string) bool {
			tmp := lock + ".new"
			if os.WriteFile(tmp, nil, 0o600) != nil {
				return false
			}
			return os.Rename(tmp, filepath.Join(filepath.Dir(lock), filepath.Base(lock))) == nil
		}},
		// removed and created again at once, empty
		{"removed and recreated", func(_ *testing.T, lock string) bool {
			if os.Remove(lock) != nil {
				return false
			}
			return os.WriteFile(lock, nil, 0o600) == nil
		}},
		// moved aside under another name, as an archiving script might
		{"moved aside", func(_ *testing.T, lock string) bool {
			return os.Rename(lock, lock+".old.new") == nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { pushesSurvive(t, tc.clean) })
	}
}

func pushesSurvive(t *testing.T, clean func(t *testing.T, lock string) bool) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	first, err := store.OpenFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	base := &registry.Document{Version: 1, Targets: []registry.Target{{Name: "h", OS: "linux"}}}
	if _, err := registry.Push(ctx, first, base, 0, "seed"); err != nil {
		t.Fatal(err)
	}

	const writers, cycles = 16, 8
	var removed atomic.Int64
	stop := make(chan struct{})
	cleaned := make(chan struct{})
	go func() {
		defer close(cleaned)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			locks, _ := filepath.Glob(filepath.Join(dir, ".lock*"))
			for _, l := range locks {
				if !strings.HasSuffix(l, ".new") && clean(t, l) {
					removed.Add(1)
				}
			}
		}
	}()

	var (
		mu    sync.Mutex
		acked = map[int64]string{}
		twice []string
	)
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		st, err := store.OpenFileStore(dir)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := 0; c < cycles; c++ {
				name := fmt.Sprintf("w%02d-c%d", w, c)
				for {
					d, m, err := registry.Load(ctx, st)
					if err != nil {
						t.Error(err)
						return
					}
					d.Targets[0].Services = append(d.Targets[0].Services, registry.Service{Name: name, Unit: name + ".service", Program: "/bin/true"})
					got, err := registry.Push(ctx, st, d, m.Revision, name)
					if errors.Is(err, store.ErrConflict) {
						continue
					}
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					if prev, ok := acked[got.Revision]; ok {
						twice = append(twice, fmt.Sprintf("revision %d acknowledged to %s and %s", got.Revision, prev, name))
					}
					acked[got.Revision] = name
					mu.Unlock()
					break
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-cleaned

	final, _, err := registry.Load(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, s := range final.Targets[0].Services {
		have[s.Name] = true
	}
	var lost []string
	for _, name := range acked {
		if !have[name] {
			lost = append(lost, name)
		}
	}
	if len(lost) > 0 || len(twice) > 0 {
		t.Fatalf("%d acknowledged writes lost (%s); %s", len(lost), strings.Join(lost, " "), strings.Join(twice, "; "))
	}
	if len(acked) != writers*cycles || len(final.Targets[0].Services) != writers*cycles {
		t.Fatalf("%d acknowledged, %d in the document, want %d", len(acked), len(final.Targets[0].Services), writers*cycles)
	}
	if removed.Load() == 0 {
		t.Fatal("the cleaner removed no lock file; the test proved nothing")
	}
	t.Logf("%d pushes acknowledged, %d lock files removed meanwhile", len(acked), removed.Load())
}
