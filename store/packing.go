package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Packing: a backend that keeps values on a shared server (etcd) may store
// the mid-sized ones (beacons) packed, so that a fleet-wide listing moves a
// third of the bytes. A reader that does not know the packed form fails on
// it, so packing is off until the store's packing document, written by an
// operator once every reader is new enough, turns it on (docs/etcd.md).
const (
	// PackingKey holds the packing document.
	PackingKey = "store/packing"
	// PackingKind names a packing document.
	PackingKind = "stado.store-packing"
	// PackedEncoding is the name, in a beacon's store_reads, of the packed
	// form this stado reads.
	PackedEncoding = "packed"
	// MaxPackingBytes bounds a packing document a writer reads.
	MaxPackingBytes = 4 << 10
)

// Reads lists the value encodings this stado reads beyond the verbatim
// and compressed ones every stado reads. The host process publishes it in
// its beacon, so an operator can see which hosts would fail on packed
// values before turning packing on.
var Reads = []string{PackedEncoding}

// Packing is the packing document.
type Packing struct {
	Kind string `json:"kind"`
	// Packed turns packing on for values a backend packs.
	Packed bool `json:"packed"`
	// At and By say when and from where it was last written.
	At time.Time `json:"at"`
	By string    `json:"by,omitempty"`
}

// DecodePacking reads a packing document, refusing any other kind.
func DecodePacking(b []byte) (Packing, error) {
	var p Packing
	if err := json.Unmarshal(b, &p); err != nil {
		return Packing{}, fmt.Errorf("%s: %w", PackingKey, err)
	}
	if p.Kind != PackingKind {
		return Packing{}, fmt.Errorf("%s: kind %q, want %q", PackingKey, p.Kind, PackingKind)
	}
	return p, nil
}

// Packer is a store that can pack values: it says whether it packs them
// now, as its packing document stood when it last read it.
type Packer interface {
	// PacksValues reads the packing document again and says whether the
	// store packs values from now on.
	PacksValues(ctx context.Context) (bool, error)
}
