package store

import "context"

// KeyLister is a store that lists the keys under a prefix without reading
// their values: a reader that only needs the names (a history pruned to
// its newest entries) asks it instead of List, whose values may be large.
type KeyLister interface {
	// Keys returns the keys List would return for prefix, in List's order.
	Keys(ctx context.Context, prefix string) ([]string, error)
}

// Keys returns the keys of the objects List(prefix) would return, sorted:
// without their values where st is a KeyLister, else through List.
func Keys(ctx context.Context, st Store, prefix string) ([]string, error) {
	if k, ok := st.(KeyLister); ok {
		return k.Keys(ctx, prefix)
	}
	objs, err := st.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(objs))
	for i, o := range objs {
		keys[i] = o.Key
	}
	return keys, nil
}
