package catalog

import (
	"context"
	"errors"
	"fmt"

	"github.com/wisent/stado/store"
)

// Push validates data as a site catalog document (ValidateSite, naming
// source) and writes it to store.CatalogKey with a compare-and-swap
// against expect: the stored revision, 0 for none yet, or, when negative,
// the revision read just before writing. It returns the merged catalog and
// the new revision. An invalid document returns its
// *registry.ValidationError and writes nothing; a lost race returns an
// error wrapping *store.ConflictError.
func Push(ctx context.Context, st store.Store, data []byte, source string, expect int64) (*Catalog, int64, error) {
	merged, err := ValidateSite(data, source)
	if err != nil {
		return nil, 0, err
	}
	if expect < 0 {
		cur, err := st.Get(ctx, store.CatalogKey)
		switch {
		case errors.Is(err, store.ErrNotFound):
			expect = 0
		case err != nil:
			return nil, 0, fmt.Errorf("read site catalog: %w", err)
		default:
			expect = cur.Revision
		}
	}
	rev, err := st.CompareAndSwap(ctx, store.CatalogKey, data, expect, store.PutOptions{})
	if err != nil {
		return nil, 0, fmt.Errorf("write site catalog: %w", err)
	}
	merged.siteRevision = rev
	return merged, rev, nil
}
