package store

import "context"

// RevisionReader is a store that tells a key's current revision without
// reading its value: a reader that keeps what it decoded asks it whether
// the object moved before it reads the object again.
type RevisionReader interface {
	// Revision returns the revision Get would return for key, or an error
	// wrapping ErrNotFound when Get would find nothing.
	Revision(ctx context.Context, key string) (int64, error)
}

// Revision returns key's current revision in st: without its value where
// st is a RevisionReader, else through Get. An absent key is an error
// wrapping ErrNotFound.
func Revision(ctx context.Context, st Store, key string) (int64, error) {
	if r, ok := st.(RevisionReader); ok {
		return r.Revision(ctx, key)
	}
	o, err := st.Get(ctx, key)
	if err != nil {
		return 0, err
	}
	return o.Revision, nil
}
