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
// It reads, from each beacon under store.BeaconPrefix, only the
// "releases" block (docs/beacon.md: state, and per product the active and
// backup images); package release cannot import beacon, which imports it.
// A beacon without the block records nothing. A beacon that is not JSON,
// whose block is not that shape, or whose host could not read its own
// release state, is an unreadable_beacon refusal naming the host: prune
// must not guess what a host keeps.
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

// recordedProducts reads a beacon's releases block: per product the
// active and backup images.
func recordedProducts(raw json.RawMessage) (map[string]ProductState, error) {
	var block struct {
		State    string `json:"state"`
		Cause    string `json:"cause"`
		Products []struct {
			Product string `json:"product"`
			Active  *Image `json:"active"`
			Backup  *Image `json:"backup"`
		} `json:"products"`
		Omitted int `json:"omitted"`
	}
	if err := json.Unmarshal(raw, &block); err != nil {
		return nil, err
	}
	switch {
	case block.State == "unreadable":
		return nil, fmt.Errorf("the host could not read its release state (%s)", block.Cause)
	case block.State != "read":
		return nil, fmt.Errorf("state %q, want read or unreadable", block.State)
	case block.Omitted > 0:
		return nil, fmt.Errorf("%d products left out of the block", block.Omitted)
	}
	out := map[string]ProductState{}
	for _, p := range block.Products {
		out[p.Product] = ProductState{Active: p.Active, Backup: p.Backup}
	}
	return out, nil
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
