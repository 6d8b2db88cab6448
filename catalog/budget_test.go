package catalog

import (
	"strings"
	"testing"

	"github.com/wisent/stado/registry"
)

// TestSiteCatalogPastTheParseBudgetIsRefusedBeforeDecoding: a site
// catalog is written by whoever can write the store, so it meets the
// registry's size limit and parse budget before yaml.v3 builds its tree.
func TestSiteCatalogPastTheParseBudgetIsRefusedBeforeDecoding(t *testing.T) {
	deep := "version: 1\nproducts: " + strings.Repeat("[", registry.MaxDocumentDepth) + strings.Repeat("]", registry.MaxDocumentDepth) + "\n"
	wide := "version: 1\nproducts: [" + strings.Repeat("a,", 20_000) + "a]\n"
	big := "version: 1\n#" + strings.Repeat("x", registry.MaxDocumentBytes) + "\n"
	for name, doc := range map[string]string{"depth": deep, "nodes": wide, "size": big} {
		_, err := Parse([]byte(doc), "site")
		if err == nil || !strings.Contains(err.Error(), "(document)") || !strings.Contains(err.Error(), "limit") {
			t.Errorf("%s: Parse = %v, want a refusal at (document) naming the limit", name, err)
		}
	}
	if _, err := Parse([]byte("version: 1\nproducts: []\n"), "site"); err != nil {
		t.Fatal(err)
	}
}
