package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/registry"
	etcdtest "github.com/wisent/stado/tests/etcd"
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

func openURL(t *testing.T, url string) registry.Store {
	t.Helper()
	st, err := registry.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// seedStore writes three registry revisions (with history), a site
// catalog, a release object, an autonomy outcome, an unrelated registry key
// and a beacon.
func seedStore(t *testing.T, st registry.Store) {
	t.Helper()
	ctx := context.Background()
	for i := 1; i <= 3; i++ {
		_, _, err := registry.Update(ctx, st, fmt.Sprintf("revision %d", i), func(d *registry.Document) error {
			d.ServiceResolver.RefreshSeconds = 10 * i
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range map[string]string{
		registry.CatalogKey:          "products: []\n",
		"releases/brama/1.2.0":       `{"sha256":"ab"}`,
		"autonomy/host1/brama/0001":  `{"outcome":"recovered"}`,
		"registry/notes":             "kept as it is",
		registry.BeaconPrefix + "h1": `{"kind":"stado.beacon"}`,
	} {
		if _, err := st.Put(ctx, k, []byte(v), registry.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// contentOf lists what a store holds under the migrated prefixes, history
// entries by their meta without revision (revisions are the store's own).
func contentOf(t *testing.T, st registry.Store) (map[string]string, []registry.Meta) {
	t.Helper()
	ctx := context.Background()
	plain := map[string]string{}
	for _, p := range []string{"catalog/", "releases/", "autonomy/", "registry/", "beacons/"} {
		objs, err := st.List(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if !strings.HasPrefix(o.Key, registry.RegistryHistoryPrefix) && o.Key != registry.RegistryKey {
				plain[o.Key] = string(o.Value)
			}
		}
	}
	h, err := registry.History(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	d, m, err := registry.Load(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if h[len(h)-1].Revision != m.Revision {
		t.Fatalf("newest history entry is revision %d, current registry %d", h[len(h)-1].Revision, m.Revision)
	}
	for i := range h {
		doc, _, err := registry.LoadRevision(ctx, st, h[i].Revision)
		if err != nil {
			t.Fatal(err)
		}
		h[i].Reason += fmt.Sprintf(" [refresh %d]", doc.ServiceResolver.RefreshSeconds)
		h[i].Revision = 0
	}
	plain["current refresh"] = fmt.Sprint(d.ServiceResolver.RefreshSeconds)
	return plain, h
}

// TestStoreMigrateRoundTripFileEtcdFile: a file store migrated to etcd
// and back to a new file store holds the same registry, history (writer,
// time, reason, document of each revision, in order), catalog, releases,
// autonomy outcomes and other registry keys; beacons stay behind.
func TestStoreMigrateRoundTripFileEtcdFile(t *testing.T) {
	c := etcdtest.Start(t, 1)
	src := "file://" + t.TempDir()
	mid := "etcd://" + strings.TrimPrefix(c.Endpoints()[0], "http://") + "/migrate"
	dst := "file://" + t.TempDir()
	seedStore(t, openURL(t, src))

	code, out, errs := runStoreCLI(t, "store", "migrate", "--from", src, "--to", mid, "--json")
	if code != 0 {
		t.Fatalf("migrate file -> etcd: exit %d: %s", code, errs)
	}
	var res storeMigrateResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("--json output %q: %v", out, err)
	}
	want := migrateCounts{Registry: 1, History: 3, RegistryOther: 1, Catalog: 1, Releases: 1, Autonomy: 1}
	if res.Kind != "stado.store.migrate" || res.Copied != want || res.Replaced != 0 || res.RegistryRevision.From != 3 || res.RegistryRevision.To <= 0 {
		t.Fatalf("migrate result %+v, want copied %+v from revision 3", res, want)
	}

	code, out, errs = runStoreCLI(t, "store", "migrate", "--from", mid, "--to", dst)
	if code != 0 {
		t.Fatalf("migrate etcd -> file: exit %d: %s", code, errs)
	}
	for _, line := range []string{"3 history entries", "catalog: 1, releases: 1, autonomy: 1", "not copied: beacons/"} {
		if !strings.Contains(out, line) {
			t.Errorf("text output lacks %q:\n%s", line, out)
		}
	}

	wantPlain, wantHist := contentOf(t, openURL(t, src))
	delete(wantPlain, registry.BeaconPrefix+"h1")
	for _, u := range []string{mid, dst} {
		plain, hist := contentOf(t, openURL(t, u))
		if !reflect.DeepEqual(plain, wantPlain) {
			t.Errorf("%s holds %v, want %v", u, plain, wantPlain)
		}
		if len(hist) != 3 || !reflect.DeepEqual(hist, wantHist) {
			t.Errorf("%s history %+v, want %+v", u, hist, wantHist)
		}
	}
	// The target can be written as usual afterwards, history included.
	st := openURL(t, dst)
	if _, _, err := registry.Update(context.Background(), st, "after migrate", func(d *registry.Document) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if h, err := registry.History(context.Background(), st); err != nil || len(h) != 4 {
		t.Fatalf("history after one more update: %d entries, %v; want 4", len(h), err)
	}
}

// TestStoreMigrateRefusesNonEmptyTargetUnlessForced: the target already
// holds a registry; migrate refuses with exit 3 and target_not_empty and
// writes nothing; with --force it replaces the target's keys (beacons of
// the target are left alone).
func TestStoreMigrateRefusesNonEmptyTargetUnlessForced(t *testing.T) {
	src, dst := "file://"+t.TempDir(), "file://"+t.TempDir()
	seedStore(t, openURL(t, src))
	target := openURL(t, dst)
	ctx := context.Background()
	if _, _, err := registry.Update(ctx, target, "already here", func(d *registry.Document) error {
		d.ServiceResolver.RefreshSeconds = 99
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := target.Put(ctx, "beacons/live", []byte("live"), registry.PutOptions{TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}

	code, _, errs := runStoreCLI(t, "store", "migrate", "--from", src, "--to", dst, "--json")
	var doc errorDoc
	if code != ExitRefused || json.Unmarshal([]byte(errs), &doc) != nil || doc.Code != "target_not_empty" {
		t.Fatalf("exit %d, stderr %s; want exit 3 target_not_empty", code, errs)
	}
	if d, _, err := registry.Load(ctx, target); err != nil || d.ServiceResolver.RefreshSeconds != 99 {
		t.Fatalf("refused migrate changed the target: %v %v", d, err)
	}

	code, out, errs := runStoreCLI(t, "store", "migrate", "--from", src, "--to", dst, "--force", "--json")
	var res storeMigrateResult
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil {
		t.Fatalf("forced migrate: exit %d: %s", code, errs)
	}
	if res.Replaced != 2 { // the target's registry document and its one history entry
		t.Fatalf("replaced %d keys, want 2", res.Replaced)
	}
	if d, _, err := registry.Load(ctx, target); err != nil || d.ServiceResolver.RefreshSeconds != 30 {
		t.Fatalf("after forced migrate: %v %v, want the source's registry", d, err)
	}
	if h, err := registry.History(ctx, target); err != nil || len(h) != 3 {
		t.Fatalf("history after forced migrate: %d entries (%v), want the source's 3", len(h), err)
	}
	if obj, err := target.Get(ctx, "beacons/live"); err != nil || string(obj.Value) != "live" {
		t.Fatalf("target beacon: %v %v, want it untouched", obj, err)
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
