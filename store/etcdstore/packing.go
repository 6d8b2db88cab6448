package etcdstore

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/wisent/stado/store"
)

const (
	// PackAbove is the size from which a value is stored packed when the
	// store's packing document turns packing on (up to CompressAbove,
	// from which values are compressed anyway).
	PackAbove = 1 << 10
	// packingRecheck is how long a writer trusts the packing document it
	// read: a fleet of 1,000 host processes reads it about three times a
	// second between them.
	packingRecheck = 5 * time.Minute
)

// packingGate is what a Store last read of the packing document.
type packingGate struct {
	mu      sync.Mutex
	checked time.Time
	on      bool
}

var _ store.Packer = (*Store)(nil)

// PacksValues reads the packing document again and says whether this
// store packs values from now on. An absent document is packing off.
func (s *Store) PacksValues(ctx context.Context) (bool, error) {
	s.packing.mu.Lock()
	defer s.packing.mu.Unlock()
	return s.readPacking(ctx)
}

// readPacking reads the packing document into the gate; s.packing.mu is
// held. On an error the gate keeps what it had: not packing is always
// safe, and a lost read must not flip a fleet's encoding.
func (s *Store) readPacking(ctx context.Context) (bool, error) {
	s.packing.checked = time.Now()
	obj, err := s.GetBounded(ctx, store.PackingKey, store.MaxPackingBytes)
	switch {
	case errors.Is(err, store.ErrNotFound):
		s.packing.on = false
		return false, nil
	case err != nil:
		return s.packing.on, err
	}
	p, err := store.DecodePacking(obj.Value)
	if err != nil {
		return s.packing.on, err
	}
	s.packing.on = p.Packed
	return p.Packed, nil
}

// packs says whether a value of n bytes is to be stored packed, reading
// the packing document when the last reading is older than
// packingRecheck.
func (s *Store) packs(ctx context.Context, n int) bool {
	if n < PackAbove || n >= CompressAbove {
		return false
	}
	s.packing.mu.Lock()
	defer s.packing.mu.Unlock()
	if s.packing.checked.IsZero() || time.Since(s.packing.checked) >= packingRecheck {
		on, _ := s.readPacking(ctx)
		return on
	}
	return s.packing.on
}
