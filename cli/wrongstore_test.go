package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/store"
)

// A store that holds no registry never reads as a fleet with nothing
// declared: every read command refuses, naming the store and the command
// that creates a registry, and exits nonzero.
func TestStoreWithoutARegistryIsRefusedNamingItAndTheFix(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	withBeacon := t.TempDir()
	st, err := store.OpenFileStore(withBeacon)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Put(context.Background(), store.BeaconPrefix+"h1", []byte(`{"kind":"stado.beacon","version":1,"host":"h1"}`), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		dir  string
		args []string
	}{
		// a mistyped directory
		{"no such directory", filepath.Join(t.TempDir(), "no", "such", "dir"), []string{"service", "list"}},
		// an empty store
		{"empty store", t.TempDir(), []string{"service", "list"}},
		// a store with beacons but no registry
		{"beacons only", withBeacon, []string{"service", "list"}},
		// JSON: the refusal is the document on stderr
		{"json", t.TempDir(), []string{"service", "list", "--json"}},
		// host health reads the same view
		{"host health", t.TempDir(), []string{"host", "health"}},
		// registry doctor too
		{"doctor", t.TempDir(), []string{"registry", "doctor"}},
		// service status of one service
		{"status", t.TempDir(), []string{"service", "status", "brama"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runReadCLI(t, tc.dir, now, tc.args...)
			if code != ExitRefused {
				t.Fatalf("exit %d, want %d; stdout %q stderr %q", code, ExitRefused, out, errOut)
			}
			if out != "" {
				t.Errorf("stdout %q, want nothing (no empty table)", out)
			}
			for _, want := range []string{"file://" + tc.dir, "holds no registry", "stado registry push"} {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr %q does not say %q", errOut, want)
				}
			}
			if strings.Contains(strings.Join(tc.args, " "), "--json") && !strings.Contains(errOut, `"code": "not_found"`) {
				t.Errorf("stderr %q is not the JSON refusal", errOut)
			}
		})
	}
}

// A stored document changed behind stado's back is validated when read:
// no row of it is shown, and doctor reports it as invalid, naming each
// violation.
func TestTamperedStoredDocumentIsRefusedByTheReadHalf(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name, doc, field string
	}{
		// a unit name that is a path
		{"unit path", `{"version":1,"targets":[{"name":"h1","os":"linux","services":[{"name":"a","unit":"../../etc/passwd","program":"/bin/a"}]}]}`, "unit"},
		// an OS nothing runs
		{"os", `{"version":1,"targets":[{"name":"h1","os":"plan9"}]}`, "os"},
		// a version stado does not know
		{"version", `{"version":7,"targets":[{"name":"h1","os":"linux"}]}`, "version"},
		// a target name with a newline
		{"target name", `{"version":1,"targets":[{"name":"h1\nh2  x  active","os":"linux"}]}`, "name"},
		// a relative program
		{"program", `{"version":1,"targets":[{"name":"h1","os":"linux","services":[{"name":"a","unit":"a.service","program":"bin/a"}]}]}`, "program"},
	} {
		for _, cmd := range [][]string{{"service", "list"}, {"registry", "doctor", "--json"}} {
			t.Run(tc.name+" "+cmd[1], func(t *testing.T) {
				dir := t.TempDir()
				st, err := store.OpenFileStore(dir)
				if err != nil {
					t.Fatal(err)
				}
				env := `{"meta":{"writer":"x","time":"2030-01-01T00:00:00Z"},"document":` + tc.doc + "}\n"
				if _, err := st.Put(context.Background(), store.RegistryKey, []byte(env), store.PutOptions{}); err != nil {
					t.Fatal(err)
				}
				code, out, errOut := runReadCLI(t, dir, now, cmd...)
				if code != ExitRefused || out != "" {
					t.Fatalf("exit %d, stdout %q, want exit %d and nothing shown; stderr %q", code, out, ExitRefused, errOut)
				}
				if !strings.Contains(errOut, "invalid") || !strings.Contains(errOut, tc.field) {
					t.Errorf("stderr %q does not name the invalid %s", errOut, tc.field)
				}
				if cmd[len(cmd)-1] == "--json" {
					var doc struct {
						Code    string            `json:"code"`
						Details []json.RawMessage `json:"details"`
					}
					if err := json.Unmarshal([]byte(errOut), &doc); err != nil || doc.Code != "validation" || len(doc.Details) == 0 {
						t.Errorf("doctor --json stderr %q: want a validation refusal with its violations (%v)", errOut, err)
					}
				}
			})
		}
	}
}
