package store

import (
	"context"
	"fmt"
	"time"

	"github.com/wisent/stado/refusal"
)

// Sentinel errors callers test with errors.Is.
var (
	// ErrNotFound: the key holds no object.
	ErrNotFound error = refusal.NewSentinel(refusal.NotFound, "not found")
	// ErrConflict: a compare-and-swap found another revision than expected.
	ErrConflict error = refusal.NewSentinel(refusal.Conflict, "revision conflict")
)

// ConflictError details a failed compare-and-swap. It unwraps to ErrConflict.
type ConflictError struct {
	Key  string
	Want int64 // the revision the caller expected (0: absent)
	Got  int64 // the revision the store holds (0: absent)
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s: expected revision %d, store holds %d", e.Key, e.Want, e.Got)
}

// Unwrap makes errors.Is(err, ErrConflict) hold.
func (e *ConflictError) Unwrap() error { return ErrConflict }

// Object is one stored value with the revision it was last written at.
// Revisions are positive and grow with every write of the key; on etcd they
// are the key's mod revision, on the file backend a per-key counter.
type Object struct {
	Key      string
	Value    []byte
	Revision int64
}

// PutOptions tune one write.
type PutOptions struct {
	// TTL, when positive, makes the object expire by itself: etcd attaches
	// a lease of that TTL, the file backend records the expiry and hides
	// the object once it has passed.
	TTL time.Duration
}

// Store holds the registry, beacons, catalog extensions, autonomy outcomes
// and release objects under slash-separated keys ("registry",
// "beacons/host1"). Implementations are safe for concurrent use by many
// goroutines and many processes, and pass storetest.Run.
type Store interface {
	// Get returns the object at key, or an error wrapping ErrNotFound.
	Get(ctx context.Context, key string) (Object, error)
	// CompareAndSwap writes value at key only if the key's current revision
	// is expect (0: the key must not exist). It returns the new revision, or
	// a *ConflictError (wrapping ErrConflict) naming the revision found.
	CompareAndSwap(ctx context.Context, key string, value []byte, expect int64, opts PutOptions) (int64, error)
	// Put writes value at key unconditionally and returns the new revision.
	Put(ctx context.Context, key string, value []byte, opts PutOptions) (int64, error)
	// List returns every object whose key starts with prefix, sorted by key.
	List(ctx context.Context, prefix string) ([]Object, error)
	// Delete removes key; deleting an absent key returns ErrNotFound.
	Delete(ctx context.Context, key string) error
	// Close releases the store's resources.
	Close() error
}

// Well-known keys and prefixes of the store layout (docs/store.md).
const (
	RegistryKey           = "registry/document"
	RegistryHistoryPrefix = "registry/history/"
	CatalogKey            = "catalog/site"
	BeaconPrefix          = "beacons/"
	ReleasePrefix         = "releases/"
	AutonomyPrefix        = "autonomy/"
)
