package catalog

import (
	"context"
	"errors"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

// OrShipped returns c, or the shipped catalog when c is nil. It is the one
// place a component that was handed no catalog falls back to the one built
// into this binary.
func OrShipped(c *Catalog) *Catalog {
	if c == nil {
		return Shipped()
	}
	return c
}

// LoadOrShipped is Load for a process that must keep working when the
// store does not answer: a nil store (one that could not be opened) or a
// store that cannot be read yields the shipped catalog and no error. A site
// catalog that breaks a rule is never silently ignored: its
// *registry.ValidationError is returned with a nil catalog. It reads one key
// and writes nothing.
func LoadOrShipped(ctx context.Context, st store.Store) (*Catalog, error) {
	if st == nil {
		return Shipped(), nil
	}
	c, err := Load(ctx, st)
	var invalid *registry.ValidationError
	switch {
	case errors.As(err, &invalid):
		return nil, err
	case err != nil:
		return Shipped(), nil
	}
	return c, nil
}
