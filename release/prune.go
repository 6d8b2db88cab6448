package release

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/store"
)

// PruneRequest says what Prune keeps.
type PruneRequest struct {
	// Keep is how many of the newest versions of each product and os/arch
	// are kept (at least 1).
	Keep int
	// Protected says whether a published build must stay whatever its age
	// (declared in the registry, or some host's active or backup image).
	// Nil protects nothing beyond Keep.
	Protected func(product, version, sha256 string) bool
	// DryRun deletes nothing and reports what would go.
	DryRun bool
}

// PrunedManifest is one published build Prune kept or deleted, and why.
type PrunedManifest struct {
	Product string `json:"product"`
	Version string `json:"version"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
	SHA256  string `json:"sha256"`
	Size    int64  `json:"size"`
	// Why it was kept: "newest" (within Keep) or "protected".
	Why string `json:"why,omitempty"`
}

// PruneResult is what Prune did (or, on a dry run, would do).
type PruneResult struct {
	DryRun  bool             `json:"dry_run"`
	Keep    int              `json:"keep"`
	Kept    []PrunedManifest `json:"kept"`
	Deleted []PrunedManifest `json:"deleted"`
	// ChunksDeleted are the chunks no kept manifest references, and
	// BytesFreed their size.
	ChunksDeleted int   `json:"chunks_deleted"`
	BytesFreed    int64 `json:"bytes_freed"`
}

// Prune bounds what the store keeps: for each product and os/arch it keeps
// the Keep newest versions (CompareVersions) and every protected one,
// deletes the other manifests, then deletes every chunk no remaining
// manifest references. Keep < 1 is a usage refusal. The chunks are listed
// before the manifests are read, so a chunk a publisher writes meanwhile
// is never taken for an orphan; a publish of a new version racing a prune
// can still lose a chunk it found stored and did not write, which
// publishing the same file again under the same version writes back.
func Prune(ctx context.Context, st store.Store, req PruneRequest) (PruneResult, error) {
	if req.Keep < 1 {
		return PruneResult{}, refusal.New(refusal.Usage, "prune keeps at least 1 version of each product, got --keep %d", req.Keep)
	}
	res := PruneResult{DryRun: req.DryRun, Keep: req.Keep, Kept: []PrunedManifest{}, Deleted: []PrunedManifest{}}
	chunkSizes, err := listChunks(ctx, st)
	if err != nil {
		return res, err
	}
	all, err := Published(ctx, st, "")
	if err != nil {
		return res, err
	}
	// Newest first within each product and os/arch.
	groups := map[string][]Manifest{}
	var order []string
	for _, m := range all {
		g := m.Product + " " + m.OS + "-" + m.Arch
		if _, ok := groups[g]; !ok {
			order = append(order, g)
		}
		groups[g] = append(groups[g], m)
	}
	sort.Strings(order)
	referenced := map[string]bool{}
	for _, g := range order {
		ms := groups[g]
		for i := len(ms) - 1; i >= 0; i-- {
			m := ms[i]
			pm := PrunedManifest{Product: m.Product, Version: m.Version, OS: m.OS, Arch: m.Arch, SHA256: m.SHA256, Size: m.Size}
			switch {
			case len(ms)-1-i < req.Keep:
				pm.Why = "newest"
			case req.Protected != nil && req.Protected(m.Product, m.Version, m.SHA256):
				pm.Why = "protected"
			}
			if pm.Why != "" {
				res.Kept = append(res.Kept, pm)
				for _, c := range m.Chunks {
					referenced[c.SHA256] = true
				}
				continue
			}
			res.Deleted = append(res.Deleted, pm)
		}
	}
	if !req.DryRun {
		for _, d := range res.Deleted {
			// Delete, not Forget: the same version may be published again,
			// and its create-only write must find a revision to grow from.
			if err := st.Delete(ctx, ManifestKey(d.Product, d.Version, d.OS, d.Arch)); err != nil && !errors.Is(err, store.ErrNotFound) {
				return res, fmt.Errorf("prune %s %s %s/%s: %w", d.Product, d.Version, d.OS, d.Arch, err)
			}
		}
	}
	orphans := make([]string, 0)
	for sha := range chunkSizes {
		if !referenced[sha] {
			orphans = append(orphans, sha)
		}
	}
	sort.Strings(orphans)
	for _, sha := range orphans {
		if !req.DryRun {
			// A chunk is written with Put, never compared and swapped, so
			// it needs no tombstone: Forget leaves nothing behind.
			if err := store.Forget(ctx, st, ChunkKey(sha)); err != nil && !errors.Is(err, store.ErrNotFound) {
				return res, fmt.Errorf("prune chunk %s: %w", ChunkKey(sha), err)
			}
		}
		res.ChunksDeleted++
		res.BytesFreed += chunkSizes[sha]
	}
	return res, nil
}

// listChunks returns the digest of every stored chunk with its size. The
// store hands the chunks to a few workers one at a time, so listing holds
// a few chunks in memory, never all of them.
func listChunks(ctx context.Context, st store.Store) (map[string]int64, error) {
	var mu sync.Mutex
	out := map[string]int64{}
	add := func(key string, size int64) {
		sha := strings.TrimPrefix(key, ChunkPrefix)
		mu.Lock()
		out[sha] = size
		mu.Unlock()
	}
	err := store.Visit(ctx, st, ChunkPrefix, 4, func(obj store.Object) { add(obj.Key, int64(len(obj.Value))) })
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", ChunkPrefix, err)
	}
	return out, nil
}
