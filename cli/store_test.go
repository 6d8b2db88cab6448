package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

// runStoreCLI runs stado in-process with args and returns the exit code,
// stdout and stderr.
func runStoreCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := NewEnv(strings.NewReader(""), &out, &errb)
	home := t.TempDir()
	env.Getenv = func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	}
	code := Run(context.Background(), env, append([]string{"stado"}, args...))
	return code, out.String(), errb.String()
}

func openURL(t *testing.T, url string) store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestStoreMigratePrintsWhatRegistryMigrateCopied: the command reports
// store.Migrate's counts (the migration itself is tested in store),
// as one JSON document or as text; a non-empty target is refused, exit 3.
func TestStoreMigratePrintsWhatRegistryMigrateCopied(t *testing.T) {
	ctx := context.Background()
	src, dst, dst2 := "file://"+t.TempDir(), "file://"+t.TempDir(), "file://"+t.TempDir()
	for i := 0; i < 2; i++ {
		if _, _, err := registry.Update(ctx, openURL(t, src), "seed", func(d *registry.Document) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := runStoreCLI(t, "store", "migrate", "--from", src, "--to", dst, "--json")
	var res store.Migrated
	decodeDoc(t, out, "stado.store.migrate", &res)
	if code != 0 || res.Copied.History != 2 || res.RegistryRevision.From != 2 || res.From != src || len(res.NotCopied) != 1 {
		t.Fatalf("exit %d %+v: %s", code, res, errs)
	}
	code, out, _ = runStoreCLI(t, "store", "migrate", "--from", src, "--to", dst2)
	for _, line := range []string{"2 history entries", "catalog: 0, releases: 0, autonomy: 0", "not copied: beacons/"} {
		if code != 0 || !strings.Contains(out, line) {
			t.Errorf("text output lacks %q (exit %d):\n%s", line, code, out)
		}
	}
	code, _, errs = runStoreCLI(t, "store", "migrate", "--from", src, "--to", dst, "--json")
	var doc errorDoc
	if code != ExitRefused || json.Unmarshal([]byte(errs), &doc) != nil || doc.Code != "target_not_empty" || doc.Hint == "" {
		t.Fatalf("exit %d, stderr %s; want exit 3 target_not_empty with a hint", code, errs)
	}
}

func TestStoreMigrateUsageErrors(t *testing.T) {
	dir := "file://" + t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"store", "migrate", "--to", dir}, "needs --from"},              // no source
		{[]string{"store", "migrate", "--from", dir, "--to", dir}, "same store"}, // one store twice
		{[]string{"store", "migrate", "--from", dir, "--to", dir, "x"}, "no arguments"},
	} {
		code, _, errs := runStoreCLI(t, tc.args...)
		if code != ExitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, %q; want exit 2 mentioning %q", tc.args, code, errs, tc.want)
		}
	}
	// A password in the target URL never reaches the output.
	code, _, errs := runStoreCLI(t, "store", "migrate", "--from", dir, "--to", "etcd://ops:hunter2@127.0.0.1:1/x?timeout=1s&dial_timeout=1s")
	if code == 0 || strings.Contains(errs, "hunter2") {
		t.Fatalf("unreachable etcd target: exit %d, stderr %q; want a failure that hides the password", code, errs)
	}
}
