package release

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

// Protection is what a prune of the fleet's store must keep whatever its
// age: every version the registry declares (fleet-wide or on any target),
// and every image a host records as its active or backup image.
type Protection struct {
	// Declared lists, per product, the versions the registry declares.
	Declared map[string][]string `json:"declared"`
	// Recorded lists, per image digest, the hosts that record it as their
	// active or backup image.
	Recorded map[string][]string `json:"recorded"`
}

// Protected reports whether the published build product version with
// digest sha must be kept.
func (p Protection) Protected(product, version, sha string) bool {
	for _, v := range p.Declared[product] {
		if v == version {
			return true
		}
	}
	return len(p.Recorded[sha]) > 0
}

// FleetProtection reads the Protection of the fleet from st: the declared
// versions from the registry (none when there is no registry yet), the
// recorded images from the beacons (RecordedImages).
func FleetProtection(ctx context.Context, st store.Store) (Protection, error) {
	p := Protection{Declared: map[string][]string{}}
	d, _, err := registry.Load(ctx, st)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return p, err
	default:
		products := map[string]bool{}
		for k := range d.Releases {
			products[k] = true
		}
		for i := range d.Targets {
			for k := range d.Targets[i].Releases {
				products[k] = true
			}
		}
		for k := range products {
			p.Declared[k] = d.DeclaredVersions(k)
		}
	}
	p.Recorded, err = RecordedImages(ctx, st)
	return p, err
}

// beaconBound is the largest beacon RecordedImages reads (beacon.MaxBytes).
const beaconBound = 4 << 20

// RecordedImages returns, per image digest, the hosts whose beacon records
// it as the active or backup image of a product.
//
// The beacon's field is the rollout's to define; until it lands this
// reads, from each beacon under store.BeaconPrefix, only a top-level
// "releases" field, as a map of product to {active, backup} images (the
// shape of HostState.Products) or as a whole HostState. A beacon without
// the field records nothing. A beacon that is not JSON, or whose
// "releases" is neither shape, is an unreadable_beacon refusal naming the
// host: prune must not guess what a host runs.
func RecordedImages(ctx context.Context, st store.Store) (map[string][]string, error) {
	var (
		mu    sync.Mutex
		out   = map[string][]string{}
		first error
	)
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
	}
	visit := func(obj store.Object) {
		host := strings.TrimPrefix(obj.Key, store.BeaconPrefix)
		var b struct {
			Releases json.RawMessage `json:"releases"`
		}
		if err := json.Unmarshal(obj.Value, &b); err != nil {
			fail(refusal.New(refusal.UnreadableBeacon, "beacon of %s: %v", host, err))
			return
		}
		if len(b.Releases) == 0 || string(b.Releases) == "null" {
			return
		}
		products, err := recordedProducts(b.Releases)
		if err != nil {
			fail(refusal.New(refusal.UnreadableBeacon, "beacon of %s: releases: %v", host, err))
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, ps := range products {
			for _, im := range []*Image{ps.Active, ps.Backup} {
				if im != nil && im.SHA256 != "" {
					out[im.SHA256] = append(out[im.SHA256], host)
				}
			}
		}
	}
	tooLarge := func(e *store.TooLargeError) {
		fail(refusal.New(refusal.UnreadableBeacon, "beacon of %s: %v", strings.TrimPrefix(e.Key, store.BeaconPrefix), e))
	}
	var err error
	if b, ok := st.(store.BoundedReader); ok {
		err = b.VisitBounded(ctx, store.BeaconPrefix, 4, beaconBound, visit, tooLarge)
	} else {
		err = store.Visit(ctx, st, store.BeaconPrefix, 4, visit)
	}
	if err != nil {
		return nil, fmt.Errorf("read beacons: %w", err)
	}
	if first != nil {
		return nil, first
	}
	for sha := range out {
		hosts := out[sha]
		sort.Strings(hosts)
		out[sha] = dedupe(hosts)
	}
	return out, nil
}

// recordedProducts reads a beacon's releases field in either shape.
func recordedProducts(raw json.RawMessage) (map[string]ProductState, error) {
	var products map[string]ProductState
	if err := json.Unmarshal(raw, &products); err == nil {
		return products, nil
	}
	var hs HostState
	if err := json.Unmarshal(raw, &hs); err != nil || hs.Kind != KindState {
		return nil, fmt.Errorf("neither a map of product to images nor a %s document", KindState)
	}
	return hs.Products, nil
}

func dedupe(sorted []string) []string {
	out := sorted[:0]
	for i, s := range sorted {
		if i == 0 || s != sorted[i-1] {
			out = append(out, s)
		}
	}
	return out
}
