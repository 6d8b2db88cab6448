package store

import (
	"context"
	"fmt"

	"github.com/wisent/stado/refusal"
)

// ErrTooLarge: a stored value is larger than the bound its reader set. A
// store that can tell before reading (the file store, by the file's size)
// reads nothing of it; etcd's values are bounded by its request limit when
// written, and a compressed one is decompressed no further than the bound.
var ErrTooLarge error = refusal.NewSentinel(refusal.ContentTooLarge, "stored value over the reader's bound")

// TooLargeError names the key, how large its value is (at least; a
// compressed value is not expanded to measure it) and the bound.
type TooLargeError struct {
	Key  string
	Size int64
	Max  int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s holds %d bytes or more, over the %d-byte bound of its reader", e.Key, e.Size, e.Max)
}

// Unwrap makes errors.Is(err, ErrTooLarge) hold.
func (e *TooLargeError) Unwrap() error { return ErrTooLarge }

// BoundedReader is a store that refuses a value over a bound without
// loading it whole.
type BoundedReader interface {
	// GetBounded is Get, with a *TooLargeError for a value over max bytes.
	GetBounded(ctx context.Context, key string, max int64) (Object, error)
	// VisitBounded is Visit, handing an object whose value is over max
	// bytes to tooLarge (with its key) instead of fn.
	VisitBounded(ctx context.Context, prefix string, workers int, max int64, fn func(Object), tooLarge func(*TooLargeError)) error
}

// GetBounded gets key from st, refusing a value over max bytes with a
// *TooLargeError; where st is no BoundedReader, the value is read and then
// judged.
func GetBounded(ctx context.Context, st Store, key string, max int64) (Object, error) {
	if b, ok := st.(BoundedReader); ok {
		return b.GetBounded(ctx, key, max)
	}
	o, err := st.Get(ctx, key)
	if err == nil && int64(len(o.Value)) > max {
		return Object{}, &TooLargeError{Key: key, Size: int64(len(o.Value)), Max: max}
	}
	return o, err
}

// VisitBounded visits every live object under prefix as Visit does, handing
// one whose value is over max bytes to tooLarge instead of fn.
func VisitBounded(ctx context.Context, st Store, prefix string, workers int, max int64, fn func(Object), tooLarge func(*TooLargeError)) error {
	if b, ok := st.(BoundedReader); ok {
		return b.VisitBounded(ctx, prefix, workers, max, fn, tooLarge)
	}
	return Visit(ctx, st, prefix, workers, func(o Object) {
		if int64(len(o.Value)) > max {
			tooLarge(&TooLargeError{Key: o.Key, Size: int64(len(o.Value)), Max: max})
			return
		}
		fn(o)
	})
}
