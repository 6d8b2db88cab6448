package cli

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wisent/stado/store"
)

func TestCatalogPushWritesAValidSiteCatalogAndShowSeesIt(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := runCatalogCLI(t, dir, "catalog", "push", filepath.Join("..", "catalog", "testdata", "site.good.yaml"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "site catalog at revision") {
		t.Fatalf("out %q", out)
	}
	code, out, _ = runCatalogCLI(t, dir, "catalog", "show", "hold-fixture")
	if code != 0 || !strings.Contains(out, "release-hold") {
		t.Fatalf("show after push: exit %d %q", code, out)
	}
	// A stale expected revision is a conflict and writes nothing.
	code, _, errOut = runCatalogCLI(t, dir, "catalog", "push", filepath.Join("..", "catalog", "testdata", "site.good.yaml"), "--expect-revision", "0", "--json")
	if code != ExitRefused || !strings.Contains(errOut, `"conflict"`) {
		t.Fatalf("stale push: exit %d %s", code, errOut)
	}
}

func TestCatalogPushOfAnInvalidDocumentWritesNothing(t *testing.T) {
	dir := t.TempDir()
	code, _, errOut := runCatalogCLI(t, dir, "catalog", "push", filepath.Join("..", "catalog", "testdata", "answering-extra-field.bad.yaml"), "--json")
	if code != ExitRefused || !strings.Contains(errOut, "answering") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	st, err := store.Open(t.Context(), "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Get(t.Context(), store.CatalogKey); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("site catalog written despite refusal: %v", err)
	}
}
