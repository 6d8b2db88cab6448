package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

// runCatalogCLI runs stado with args against a file store in a fresh
// directory (HOME isolated too) and returns exit code, stdout and stderr.
func runCatalogCLI(t *testing.T, storeDir string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	env := NewEnv(strings.NewReader(""), &out, &errOut)
	home := t.TempDir()
	env.Getenv = func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	}
	full := append([]string{"stado", "--store", "file://" + storeDir}, args...)
	code := Run(t.Context(), env, full)
	return code, out.String(), errOut.String()
}

func putSiteCatalog(t *testing.T, dir, file string) int64 {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(t.Context(), "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rev, err := st.Put(t.Context(), store.CatalogKey, data, store.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

func TestCatalogShowListsEveryProductAndTheRecoveryList(t *testing.T) {
	code, out, errOut := runCatalogCLI(t, t.TempDir(), "catalog", "show")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"brama ", "brama-grant-sync", "oarbank-agent", "skarbiec", "stado ",
		"com.wisent.stado", "GET /readyz (repair: crypto, audit-lock)",
		"stado-host", "recovery", "site catalog: none",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if lines := strings.Count(out, "\n"); lines != 1+6+1+2 {
		t.Errorf("%d lines, want header, 6 products, 1 recovery row, blank and footer:\n%s", lines, out)
	}
}

func TestCatalogShowMergesTheSiteCatalogFromTheStore(t *testing.T) {
	dir := t.TempDir()
	rev := putSiteCatalog(t, dir, "../catalog/testdata/site.good.yaml")
	code, out, errOut := runCatalogCLI(t, dir, "catalog", "show", "--json")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Kind         string `json:"kind"`
		SiteRevision int64  `json:"site_revision"`
		Products     []struct {
			Name, Origin string
		} `json:"products"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, out)
	}
	if doc.Kind != "stado.catalog.show" || doc.SiteRevision != rev {
		t.Errorf("kind %q revision %d, want stado.catalog.show at %d", doc.Kind, doc.SiteRevision, rev)
	}
	origins := map[string]string{}
	for _, p := range doc.Products {
		origins[p.Name] = p.Origin
	}
	if origins["hold-fixture"] != "site" || origins["brama"] != "site" || origins["skarbiec"] != "shipped" {
		t.Errorf("origins %v", origins)
	}
	// --shipped ignores the store.
	code, out, _ = runCatalogCLI(t, dir, "catalog", "show", "--shipped")
	if code != ExitOK || strings.Contains(out, "hold-fixture") {
		t.Errorf("--shipped: exit %d, output mentions the site product:\n%s", code, out)
	}
}

func TestCatalogShowOfOneEntryByUnitExpandsItsRepairSteps(t *testing.T) {
	for _, key := range []string{"skarbiec", "skarbiec.service", "com.wisent.skarbiec"} {
		// The flag after the argument is honoured too.
		code, out, errOut := runCatalogCLI(t, t.TempDir(), "catalog", "show", key, "--json")
		if code != ExitOK {
			t.Fatalf("%s: exit %d: %s", key, code, errOut)
		}
		var doc struct {
			Kind  string `json:"kind"`
			Entry struct {
				Name      string `json:"name"`
				Answering struct {
					Method, Path string
					Repair       []string
				} `json:"answering"`
			} `json:"entry"`
			RepairSteps []struct {
				Name  string   `json:"name"`
				Needs []string `json:"needs"`
				Linux struct {
					Argv []string `json:"argv"`
				} `json:"linux"`
			} `json:"repair_steps"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("%s: %v\n%s", key, err, out)
		}
		if doc.Kind != "stado.catalog.show" || doc.Entry.Name != "skarbiec" || doc.Entry.Answering.Path != "/readyz" {
			t.Errorf("%s: %+v", key, doc)
		}
		if len(doc.RepairSteps) != 2 || doc.RepairSteps[0].Name != "crypto" || doc.RepairSteps[1].Name != "audit-lock" ||
			doc.RepairSteps[0].Needs[0] != "SKARBIEC_READY_WITHIN_SECONDS" || doc.RepairSteps[0].Linux.Argv[0] != "/usr/local/bin/skarbiec" {
			t.Errorf("%s: repair steps %+v", key, doc.RepairSteps)
		}
	}
	code, out, _ := runCatalogCLI(t, t.TempDir(), "catalog", "show", "brama")
	if code != ExitOK || !strings.Contains(out, "POST /v1/chat/completions") || !strings.Contains(out, "none (restart only)") ||
		!strings.Contains(out, `"max_tokens":1`) {
		t.Errorf("plain brama entry:\n%s", out)
	}
}

func TestCatalogShowOfAnUnknownEntryIsRefusedNotFound(t *testing.T) {
	code, out, errOut := runCatalogCLI(t, t.TempDir(), "--json", "catalog", "show", "nosuch.service")
	if code != ExitRefused || out != "" {
		t.Fatalf("exit %d stdout %q, want %d and nothing on stdout", code, out, ExitRefused)
	}
	var e errorDoc
	if err := json.Unmarshal([]byte(errOut), &e); err != nil || e.Code != "not_found" || !strings.Contains(e.Message, "nosuch.service") {
		t.Errorf("stderr %s (%v)", errOut, err)
	}
}

func TestCatalogValidateReportsEveryViolationAndExits3(t *testing.T) {
	file := "../catalog/testdata/five-violations.bad.yaml"
	code, out, errOut := runCatalogCLI(t, t.TempDir(), "catalog", "validate", "--json", file)
	if code != ExitRefused || out != "" {
		t.Fatalf("exit %d stdout %q, want %d", code, out, ExitRefused)
	}
	var e struct {
		Code    string               `json:"code"`
		Details []registry.Violation `json:"details"`
	}
	if err := json.Unmarshal([]byte(errOut), &e); err != nil {
		t.Fatalf("stderr is not JSON: %v\n%s", err, errOut)
	}
	want := []string{"products[0].units.systemd", "products[0].program", "products[0].answering.method", "products[1].port", "steps.warm.linux.timeout_seconds"}
	if e.Code != "validation" || len(e.Details) != len(want) {
		t.Fatalf("code %q details %v", e.Code, e.Details)
	}
	for i, p := range want {
		if e.Details[i].Path != p {
			t.Errorf("violation %d at %s, want %s", i, e.Details[i].Path, p)
		}
	}
	// Plain text names the file and every path.
	code, _, errOut = runCatalogCLI(t, t.TempDir(), "catalog", "validate", file)
	if code != ExitRefused || !strings.Contains(errOut, file) || strings.Count(errOut, "\n  ") != 5 {
		t.Errorf("plain: exit %d\n%s", code, errOut)
	}
}

func TestCatalogValidateOfAGoodFileNamesWhatItAdds(t *testing.T) {
	code, out, errOut := runCatalogCLI(t, t.TempDir(), "catalog", "validate", "../catalog/testdata/site.good.yaml", "--json")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc catalog.Validated
	decodeDoc(t, out, "stado.catalog.validate", &doc)
	if !doc.Valid || strings.Join(doc.Products, ",") != "brama,hold-fixture" ||
		strings.Join(doc.Steps, ",") != "object-api,release-hold" {
		t.Errorf("%+v", doc)
	}
}

func TestCatalogValidateArgumentsAndMissingFile(t *testing.T) {
	if code, _, _ := runCatalogCLI(t, t.TempDir(), "catalog", "validate"); code != ExitUsage {
		t.Errorf("no FILE: exit %d, want %d", code, ExitUsage)
	}
	if code, _, _ := runCatalogCLI(t, t.TempDir(), "catalog", "show", "a", "b"); code != ExitUsage {
		t.Errorf("two names: exit %d, want %d", code, ExitUsage)
	}
	code, _, errOut := runCatalogCLI(t, t.TempDir(), "catalog", "validate", filepath.Join(t.TempDir(), "absent.yaml"))
	if code != ExitFailure || !strings.Contains(errOut, "absent.yaml") {
		t.Errorf("missing file: exit %d %s", code, errOut)
	}
}

func TestCatalogShowRefusesAnInvalidSiteCatalogInTheStore(t *testing.T) {
	dir := t.TempDir()
	putSiteCatalog(t, dir, "../catalog/testdata/method-lowercase.bad.yaml")
	code, _, errOut := runCatalogCLI(t, dir, "catalog", "show")
	if code != ExitRefused || !strings.Contains(errOut, "products[0].answering.method") || !strings.Contains(errOut, store.CatalogKey) {
		t.Errorf("exit %d:\n%s", code, errOut)
	}
}
