package registry_test

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

// The registry history is bounded: it keeps the newest $STADO_HISTORY_KEEP
// revisions (100 by default), the current one always among them, and an
// older revision reads as not found.
func TestRegistryHistoryKeepsTheNewestRevisionsOnly(t *testing.T) {
	for _, tc := range []struct {
		name   string
		keep   string // $STADO_HISTORY_KEEP
		pushes int
		want   int // entries History returns
	}{
		// fewer pushes than the bound: all kept
		{"under the bound", "5", 3, 3},
		// exactly the bound
		{"at the bound", "5", 5, 5},
		// past the bound: the newest five
		{"past the bound", "5", 40, 5},
		// a bound of one keeps the current revision
		{"keep one", "1", 7, 1},
		// an unusable value falls back to the default
		{"default", "zero", 12, 12},
		// past a sweep boundary (revision 32, 64): still the newest ten
		{"past sweeps", "10", 70, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("STADO_HISTORY_KEEP", tc.keep)
			st, err := store.OpenFileStore(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			var rev int64
			for i := 0; i < tc.pushes; i++ {
				d := &registry.Document{Version: 1, Targets: []registry.Target{{Name: "h" + strconv.Itoa(i), OS: "linux"}}}
				m, err := registry.Push(ctx, st, d, rev, "")
				if err != nil {
					t.Fatal(err)
				}
				rev = m.Revision
			}
			h, err := registry.History(ctx, st)
			if err != nil {
				t.Fatal(err)
			}
			if len(h) != tc.want || h[len(h)-1].Revision != rev {
				t.Fatalf("history holds %d revisions ending at %d, want %d ending at %d", len(h), h[len(h)-1].Revision, tc.want, rev)
			}
			if oldest := h[0].Revision; oldest > 1 {
				if _, _, err := registry.LoadRevision(ctx, st, oldest-1); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("revision %d: %v, want not found", oldest-1, err)
				}
			}
		})
	}
}

// Pruned history entries leave no file behind on the file store (no
// tombstone, no lock file): the store directory stays the same size however
// many revisions are pushed.
func TestPrunedHistoryLeavesNoFilesBehind(t *testing.T) {
	t.Setenv("STADO_HISTORY_KEEP", "5")
	dir := t.TempDir()
	st, err := store.OpenFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	count := func() int {
		n := 0
		filepath.WalkDir(dir, func(_ string, d fs.DirEntry, _ error) error {
			if d != nil && !d.IsDir() {
				n++
			}
			return nil
		})
		return n
	}
	var rev int64
	sizes := map[int]int{}
	for i := 1; i <= 200; i++ {
		d := &registry.Document{Version: 1, Targets: []registry.Target{{Name: "h" + strconv.Itoa(i), OS: "linux"}}}
		m, err := registry.Push(ctx, st, d, rev, "")
		if err != nil {
			t.Fatal(err)
		}
		rev = m.Revision
		if i == 50 || i == 200 {
			sizes[i] = count()
		}
	}
	if sizes[200] != sizes[50] {
		t.Fatalf("the store holds %d files after 200 pushes and %d after 50: pruned entries left files", sizes[200], sizes[50])
	}
}
