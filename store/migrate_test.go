package store_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
	_ "github.com/wisent/stado/store/etcdstore"
	etcdtest "github.com/wisent/stado/tests/etcd"
)

func openURL(t *testing.T, url string) store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// seedMigration writes three registry revisions (with history), a site
// catalog, a release object, an autonomy outcome, an unrelated registry key
// and a beacon.
func seedMigration(t *testing.T, st store.Store) {
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
		store.CatalogKey:            "products: []\n",
		"releases/brama/1.2.0":      `{"sha256":"ab"}`,
		"autonomy/host1/brama/0001": `{"outcome":"recovered"}`,
		"registry/notes":            "kept as it is",
		store.BeaconPrefix + "h1":   `{"kind":"stado.beacon"}`,
	} {
		if _, err := st.Put(ctx, k, []byte(v), store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// migratedContent lists what a store holds under the migrated prefixes,
// history entries by their meta without revision (revisions are the
// store's own).
func migratedContent(t *testing.T, st store.Store) (map[string]string, []store.Meta) {
	t.Helper()
	ctx := context.Background()
	plain := map[string]string{}
	for _, p := range []string{"catalog/", "releases/", "autonomy/", "registry/", "beacons/"} {
		objs, err := st.List(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if !strings.HasPrefix(o.Key, store.RegistryHistoryPrefix) && o.Key != store.RegistryKey {
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

// TestMigrateRoundTripFileEtcdFile: a file store migrated to etcd and back
// to a new file store holds the same registry, history (writer, time,
// reason, document of each revision, in order), catalog, releases, autonomy
// outcomes and other registry keys; beacons stay behind.
func TestMigrateRoundTripFileEtcdFile(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	src := openURL(t, "file://"+t.TempDir())
	mid := openURL(t, "etcd://"+strings.TrimPrefix(c.Endpoints()[0], "http://")+"/migrate")
	dst := openURL(t, "file://"+t.TempDir())
	seedMigration(t, src)

	res, err := store.Migrate(ctx, src, mid, false)
	if err != nil {
		t.Fatalf("migrate file -> etcd: %v", err)
	}
	want := store.MigrationCounts{Registry: 1, History: 3, RegistryOther: 1, Catalog: 1, Releases: 1, Autonomy: 1}
	if res.Copied != want || res.Replaced != 0 || res.RegistryRevision.From != 3 || res.RegistryRevision.To <= 0 {
		t.Fatalf("migrate result %+v, want copied %+v from revision 3", res, want)
	}
	if _, err := store.Migrate(ctx, mid, dst, false); err != nil {
		t.Fatalf("migrate etcd -> file: %v", err)
	}

	wantPlain, wantHist := migratedContent(t, src)
	delete(wantPlain, store.BeaconPrefix+"h1")
	for name, st := range map[string]store.Store{"etcd": mid, "file": dst} {
		plain, hist := migratedContent(t, st)
		if !reflect.DeepEqual(plain, wantPlain) {
			t.Errorf("%s holds %v, want %v", name, plain, wantPlain)
		}
		if len(hist) != 3 || !reflect.DeepEqual(hist, wantHist) {
			t.Errorf("%s history %+v, want %+v", name, hist, wantHist)
		}
	}
	// The target can be written as usual afterwards, history included.
	if _, _, err := registry.Update(ctx, dst, "after migrate", func(d *registry.Document) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if h, err := registry.History(ctx, dst); err != nil || len(h) != 4 {
		t.Fatalf("history after one more update: %d entries, %v; want 4", len(h), err)
	}
}

// TestMigrateRefusesNonEmptyTargetUnlessForced: the target already holds a
// registry; Migrate refuses with target_not_empty and writes nothing; with
// force it replaces the target's keys (its beacons are left alone).
func TestMigrateRefusesNonEmptyTargetUnlessForced(t *testing.T) {
	ctx := context.Background()
	src, target := openURL(t, "file://"+t.TempDir()), openURL(t, "file://"+t.TempDir())
	seedMigration(t, src)
	if _, _, err := registry.Update(ctx, target, "already here", func(d *registry.Document) error {
		d.ServiceResolver.RefreshSeconds = 99
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := target.Put(ctx, "beacons/live", []byte("live"), store.PutOptions{TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}

	if _, err := store.Migrate(ctx, src, target, false); !refusal.Is(err, refusal.TargetNotEmpty) {
		t.Fatalf("migrate into a written store: %v, want target_not_empty", err)
	}
	if d, _, err := registry.Load(ctx, target); err != nil || d.ServiceResolver.RefreshSeconds != 99 {
		t.Fatalf("refused migrate changed the target: %v %v", d, err)
	}

	res, err := store.Migrate(ctx, src, target, true)
	if err != nil {
		t.Fatalf("forced migrate: %v", err)
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

// TestMigrateOfAnUnreadableHistoryWritesNothing: a history entry that is
// not a registry envelope stops the migration before the first write.
func TestMigrateOfAnUnreadableHistoryWritesNothing(t *testing.T) {
	ctx := context.Background()
	src, target := openURL(t, "file://"+t.TempDir()), openURL(t, "file://"+t.TempDir())
	seedMigration(t, src)
	if _, err := src.Put(ctx, store.HistoryKey(7), []byte("not json"), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Migrate(ctx, src, target, false); err == nil || !strings.Contains(err.Error(), "not a registry envelope") {
		t.Fatalf("migrate: %v, want the history entry refused", err)
	}
	if objs, err := target.List(ctx, ""); err != nil || len(objs) != 0 {
		t.Fatalf("target holds %d keys (%v), want none", len(objs), err)
	}
}
