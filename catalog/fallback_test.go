package catalog

import (
	"context"
	"errors"
	"testing"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

// unreadable is a store whose every read fails.
type unreadable struct{ store.Store }

func (unreadable) Get(context.Context, string) (store.Object, error) {
	return store.Object{}, errors.New("disk on fire")
}

func TestOrShippedFallsBackOnlyForNoCatalog(t *testing.T) {
	if OrShipped(nil) != Shipped() {
		t.Error("nil did not yield the shipped catalog")
	}
	st := openStore(t)
	if _, err := st.Put(context.Background(), store.CatalogKey, []byte("version: 1\nsteps: {}\n"), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	site, err := Load(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	if OrShipped(site) != site {
		t.Error("a catalog was replaced")
	}
}

func TestLoadOrShippedKeepsWorkingWithoutAStoreButNotWithABadSiteCatalog(t *testing.T) {
	ctx := context.Background()
	// no store at all, or one that cannot be read: the shipped catalog
	for name, st := range map[string]store.Store{"nil": nil, "unreadable": unreadable{}} {
		if c, err := LoadOrShipped(ctx, st); err != nil || c != Shipped() {
			t.Errorf("%s store: %v, %v; want the shipped catalog", name, c, err)
		}
	}
	// a good site catalog is merged
	st := openStore(t)
	if _, err := st.Put(ctx, store.CatalogKey, []byte("version: 1\nsteps: {}\n"), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if c, err := LoadOrShipped(ctx, st); err != nil || c.SiteRevision() == 0 {
		t.Errorf("site catalog: %v, want it merged", err)
	}
	// a site catalog that breaks a rule is refused, never replaced
	if _, err := st.Put(ctx, store.CatalogKey, []byte("version: 1\nbogus: true\n"), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	var invalid *registry.ValidationError
	if c, err := LoadOrShipped(ctx, st); c != nil || !errors.As(err, &invalid) {
		t.Errorf("invalid site catalog: %v, %v; want its validation error", c, err)
	}
}
