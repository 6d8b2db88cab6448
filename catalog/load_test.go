package catalog

import (
	"errors"
	"os"
	"testing"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

func openStore(t *testing.T) store.Store {
	t.Helper()
	st, err := store.Open(t.Context(), "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestLoadWithoutSiteDocumentIsTheShippedCatalog(t *testing.T) {
	c, err := Load(t.Context(), openStore(t))
	if err != nil {
		t.Fatal(err)
	}
	if c != Shipped() || c.SiteRevision() != 0 {
		t.Fatalf("got %p revision %d, want the shipped catalog", c, c.SiteRevision())
	}
}

func TestLoadMergesTheSiteDocumentAtItsRevision(t *testing.T) {
	st := openStore(t)
	data, err := os.ReadFile("testdata/site.good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rev, err := st.CompareAndSwap(t.Context(), store.CatalogKey, data, 0, store.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Load(t.Context(), st)
	if err != nil {
		t.Fatal(err)
	}
	if c.SiteRevision() != rev {
		t.Errorf("site revision %d, want %d", c.SiteRevision(), rev)
	}
	if _, ok := c.Lookup("hold-fixture"); !ok {
		t.Error("site product missing after Load")
	}
	if _, ok := c.Lookup("skarbiec"); !ok {
		t.Error("shipped product missing after Load")
	}
}

func TestLoadRefusesAnInvalidSiteDocumentNamingTheField(t *testing.T) {
	st := openStore(t)
	bad := []byte(`{"version":1,"products":[{"name":"x","units":{"systemd":"x.service"},"program":"/bin/x","answering":{"method":"get","path":"/"}}]}`)
	if _, err := st.Put(t.Context(), store.CatalogKey, bad, store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := Load(t.Context(), st)
	var ve *registry.ValidationError
	if !errors.As(err, &ve) || len(ve.Violations) != 1 || ve.Violations[0].Path != "products[0].answering.method" {
		t.Fatalf("err = %v, want one violation at products[0].answering.method", err)
	}
}
