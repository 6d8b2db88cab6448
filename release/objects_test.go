package release_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"aead.dev/minisign"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/release"
	"github.com/wisent/stado/store"
	_ "github.com/wisent/stado/store/etcdstore"
	etcdtest "github.com/wisent/stado/tests/etcd"
)

// The release objects on the file store and on a real etcd: the same
// behaviour, tested once (runObjects).
func TestReleaseObjectsOnTheFileStore(t *testing.T) {
	runObjects(t, func(t *testing.T) store.Store {
		st, err := store.OpenFileStore(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	})
}

var etcdPrefixes atomic.Int64

func TestReleaseObjectsOnEtcd(t *testing.T) {
	c := etcdtest.Start(t, 1)
	runObjects(t, func(t *testing.T) store.Store {
		var eps []string
		for _, u := range c.Endpoints() {
			eps = append(eps, strings.TrimPrefix(u, "http://"))
		}
		url := fmt.Sprintf("etcd://%s/release-test/%d", strings.Join(eps, ","), etcdPrefixes.Add(1))
		st, err := store.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	})
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// snapshot is every release object of the store, key → value.
func snapshot(t *testing.T, st store.Store) map[string]string {
	t.Helper()
	objs, err := st.List(context.Background(), store.ReleasePrefix)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, o := range objs {
		out[o.Key] = string(o.Value)
	}
	return out
}

func sameObjects(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func publish(t *testing.T, st store.Store, key minisign.PrivateKey, product, version string, data []byte) release.PublishResult {
	t.Helper()
	res, err := release.Publish(context.Background(), st, release.PublishRequest{Product: product, Version: version, OS: "linux", Arch: "amd64",
		Data: data, Key: key, Reason: "test", Now: time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatalf("publish %s %s: %v", product, version, err)
	}
	return res
}

func runObjects(t *testing.T, open func(t *testing.T) store.Store) {
	ctx := context.Background()
	priv, pub, _ := newKey(t)
	keys := []minisign.PublicKey{pub}

	// A 3 MB file is six chunks; publishing it again reuses all six and
	// writes nothing; one byte different under the same version is a
	// conflict naming both digests, and nothing is written.
	t.Run("PublishChunksDedupsAndRefusesOtherBytes", func(t *testing.T) {
		st := open(t)
		data := randomBytes(t, 3<<20)
		res := publish(t, st, priv, "brama", "1.4.3", data)
		if res.Chunks != 6 || res.ChunksWritten != 6 || res.ChunksReused != 0 || res.Unchanged || res.SHA256 != digestOf(data) {
			t.Fatalf("first publish: %+v", res)
		}
		before := snapshot(t, st)
		if len(before) != 7 {
			t.Fatalf("%d objects after publishing 6 chunks and a manifest", len(before))
		}
		again := publish(t, st, priv, "brama", "1.4.3", data)
		if !again.Unchanged || again.ChunksWritten != 0 || again.ChunksReused != 6 || again.ManifestSHA256 != res.ManifestSHA256 {
			t.Fatalf("republish: %+v", again)
		}
		other := bytes.Clone(data)
		other[len(other)/2] ^= 1
		_, err := release.Publish(ctx, st, release.PublishRequest{Product: "brama", Version: "1.4.3", OS: "linux", Arch: "amd64", Data: other, Key: priv})
		if !refusal.Is(err, refusal.Conflict) || !strings.Contains(err.Error(), digestOf(data)) || !strings.Contains(err.Error(), digestOf(other)) {
			t.Fatalf("other bytes: %v, want a conflict naming both digests", err)
		}
		if after := snapshot(t, st); !sameObjects(before, after) {
			t.Fatalf("the refused publish changed the store: %d objects, was %d", len(after), len(before))
		}
		// A new version sharing five of the six chunks writes one.
		v2 := publish(t, st, priv, "brama", "1.4.4", other)
		if v2.ChunksWritten != 1 || v2.ChunksReused != 5 {
			t.Fatalf("new version with one chunk changed: %+v", v2)
		}
	})

	// A published version fetches back byte for byte once verified.
	t.Run("FetchReturnsTheVerifiedBytes", func(t *testing.T) {
		st := open(t)
		data := randomBytes(t, ChunkPlusSome)
		publish(t, st, priv, "brama", "1.4.3", data)
		s, err := release.LoadSigned(ctx, st, "brama", "1.4.3", "linux", "amd64")
		if err != nil {
			t.Fatal(err)
		}
		m, err := release.VerifySigned(s, keys, "brama", "1.4.3", "linux", "amd64")
		if err != nil {
			t.Fatal(err)
		}
		got, err := release.Fetch(ctx, st, m)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("fetch: %d bytes, %v", len(got), err)
		}
		empty := publish(t, st, priv, "empty", "1", nil)
		if empty.Chunks != 0 {
			t.Fatalf("an empty file has %d chunks", empty.Chunks)
		}
		s, _ = release.LoadSigned(ctx, st, "empty", "1", "linux", "amd64")
		if m, err := release.VerifySigned(s, keys, "empty", "1", "linux", "amd64"); err != nil {
			t.Fatal(err)
		} else if got, err := release.Fetch(ctx, st, m); err != nil || len(got) != 0 {
			t.Fatalf("empty fetch: %v", err)
		}
	})

	// Each way the stored bytes can be wrong is refused with its code,
	// naming what is wrong.
	t.Run("FetchRefusesTamperedMissingAndMismatchedBytes", func(t *testing.T) {
		st := open(t)
		data := randomBytes(t, ChunkPlusSome)
		publish(t, st, priv, "brama", "1.4.3", data)
		s, _ := release.LoadSigned(ctx, st, "brama", "1.4.3", "linux", "amd64")
		m, err := release.VerifySigned(s, keys, "brama", "1.4.3", "linux", "amd64")
		if err != nil {
			t.Fatal(err)
		}
		first := release.ChunkKey(m.Chunks[0].SHA256)
		orig, _ := st.Get(ctx, first)

		tampered := bytes.Clone(orig.Value)
		tampered[0] ^= 0xff
		mustPut(t, st, first, tampered)
		if _, err := release.Fetch(ctx, st, m); !refusal.Is(err, refusal.ReleaseTampered) || !strings.Contains(err.Error(), first) {
			t.Fatalf("tampered chunk: %v, want release_tampered naming %s", err, first)
		}
		// Publishing the same bytes again repairs the chunk.
		if res := publish(t, st, priv, "brama", "1.4.3", data); !res.Unchanged || res.ChunksWritten != 1 {
			t.Fatalf("republish over a tampered chunk: %+v", res)
		}
		if _, err := release.Fetch(ctx, st, m); err != nil {
			t.Fatalf("after the repair: %v", err)
		}

		if err := st.Delete(ctx, first); err != nil {
			t.Fatal(err)
		}
		if _, err := release.Fetch(ctx, st, m); !refusal.Is(err, refusal.NotFound) || !strings.Contains(err.Error(), first) {
			t.Fatalf("missing chunk: %v, want not_found naming %s", err, first)
		}
		mustPut(t, st, first, orig.Value)

		short := m
		short.Size--
		if _, err := release.Fetch(ctx, st, short); !refusal.Is(err, refusal.ReleaseDigest) {
			t.Fatalf("size mismatch: %v, want release_digest_mismatch", err)
		}
		wrong := m
		wrong.SHA256 = digestOf([]byte("other"))
		if _, err := release.Fetch(ctx, st, wrong); !refusal.Is(err, refusal.ReleaseDigest) || !strings.Contains(err.Error(), m.SHA256) {
			t.Fatalf("digest mismatch: %v, want release_digest_mismatch naming the assembled digest", err)
		}
		huge := m
		huge.Size = release.MaxImageBytes + 1
		if _, err := release.Fetch(ctx, st, huge); !refusal.Is(err, refusal.ContentTooLarge) {
			t.Fatalf("a manifest over the bound: %v, want content_too_large before reading", err)
		}
		if _, err := release.LoadSigned(ctx, st, "brama", "9.9.9", "linux", "amd64"); !refusal.Is(err, refusal.NotFound) ||
			!strings.Contains(err.Error(), "brama 9.9.9") || !strings.Contains(err.Error(), "linux/amd64") {
			t.Fatalf("unpublished version: %v, want not_found naming it", err)
		}
		mustPut(t, st, release.ManifestKey("brama", "0.1", "linux", "amd64"), []byte("{}"))
		if _, err := release.LoadSigned(ctx, st, "brama", "0.1", "linux", "amd64"); !refusal.Is(err, refusal.ReleaseUnsigned) {
			t.Fatalf("an object that is no signed manifest: %v, want release_unsigned", err)
		}
	})

	// Prune keeps the newest Keep per product and os/arch and every
	// protected one, deletes the rest, then every chunk no kept manifest
	// references; a dry run deletes nothing.
	t.Run("PruneKeepsNewestAndProtectedAndDropsOrphanChunks", func(t *testing.T) {
		st := open(t)
		vs := []string{"1.2.0", "1.10.0", "1.9.0", "1.0.0-rc.1", "1.0.0"}
		data := map[string][]byte{}
		for _, v := range vs {
			data[v] = randomBytes(t, 1000)
			publish(t, st, priv, "brama", v, data[v])
		}
		publish(t, st, priv, "tilde", "1", randomBytes(t, 10))
		got, err := release.Published(ctx, st, "brama")
		if err != nil {
			t.Fatal(err)
		}
		var order []string
		for _, m := range got {
			order = append(order, m.Version)
		}
		if strings.Join(order, " ") != "1.0.0-rc.1 1.0.0 1.2.0 1.9.0 1.10.0" {
			t.Fatalf("Published order: %v", order)
		}
		if _, err := release.Prune(ctx, st, release.PruneRequest{Keep: 0}); !refusal.Is(err, refusal.Usage) {
			t.Fatalf("keep 0: %v", err)
		}
		protected := func(product, version, sha string) bool { return sha == digestOf(data["1.0.0-rc.1"]) }
		before := snapshot(t, st)
		dry, err := release.Prune(ctx, st, release.PruneRequest{Keep: 2, Protected: protected, DryRun: true})
		if err != nil || !sameObjects(before, snapshot(t, st)) {
			t.Fatalf("dry run: %v, or it changed the store", err)
		}
		res, err := release.Prune(ctx, st, release.PruneRequest{Keep: 2, Protected: protected})
		if err != nil {
			t.Fatal(err)
		}
		names := func(ms []release.PrunedManifest) string {
			var out []string
			for _, m := range ms {
				out = append(out, m.Product+" "+m.Version+" "+m.Why)
			}
			sort.Strings(out)
			return strings.Join(out, ", ")
		}
		if names(res.Kept) != "brama 1.0.0-rc.1 protected, brama 1.10.0 newest, brama 1.9.0 newest, tilde 1 newest" ||
			names(res.Deleted) != "brama 1.0.0 , brama 1.2.0 " || res.ChunksDeleted != 2 || res.BytesFreed != 2000 {
			t.Fatalf("prune: kept %s; deleted %s; %d chunks, %d bytes", names(res.Kept), names(res.Deleted), res.ChunksDeleted, res.BytesFreed)
		}
		if names(dry.Deleted) != names(res.Deleted) || dry.ChunksDeleted != res.ChunksDeleted {
			t.Fatalf("the dry run said %s / %d chunks, the prune did %s / %d", names(dry.Deleted), dry.ChunksDeleted, names(res.Deleted), res.ChunksDeleted)
		}
		if len(snapshot(t, st)) != 8 { // four manifests, four chunks
			t.Fatalf("%d objects remain, want 8", len(snapshot(t, st)))
		}
		// A pruned version can be published again.
		publish(t, st, priv, "brama", "1.2.0", data["1.2.0"])
	})

	// Declaring a version writes a registry revision with its reason; an
	// unpublished version, and a missing reason, are refused.
	t.Run("DeclareWritesARevisionOnlyForAPublishedVersion", func(t *testing.T) {
		st := open(t)
		doc := &registry.Document{Version: 1, Targets: []registry.Target{{Name: "host1", OS: registry.OSLinux}}}
		if _, err := registry.Push(ctx, st, doc, 0, "fixture"); err != nil {
			t.Fatal(err)
		}
		publish(t, st, priv, "brama", "1.4.3", []byte("brama"))
		if _, err := release.Declare(ctx, st, release.DeclareRequest{Product: "brama", Version: "1.4.4", Reason: "r"}); !refusal.Is(err, refusal.NotFound) {
			t.Fatalf("unpublished: %v, want not_found", err)
		}
		if _, err := release.Declare(ctx, st, release.DeclareRequest{Product: "brama", Version: "1.4.3"}); !refusal.Is(err, refusal.Validation) {
			t.Fatalf("no reason: %v, want validation", err)
		}
		res, err := release.Declare(ctx, st, release.DeclareRequest{Product: "brama", Version: "1.4.3", Host: "host1", Pin: true, Reason: "pin host1"})
		if err != nil || res.Unchanged || res.Revision == 0 || strings.Join(res.Platforms, ",") != "linux-amd64" {
			t.Fatalf("declare: %+v, %v", res, err)
		}
		again, err := release.Declare(ctx, st, release.DeclareRequest{Product: "brama", Version: "1.4.3", Host: "host1", Pin: true, Reason: "again"})
		if err != nil || !again.Unchanged || again.Revision != res.Revision {
			t.Fatalf("declare again: %+v, %v", again, err)
		}
		if _, err := release.Declare(ctx, st, release.DeclareRequest{Product: "brama", Version: "1.4.3", Host: "nosuch", Reason: "r"}); !refusal.Is(err, refusal.NotFound) {
			t.Fatalf("unknown host: %v", err)
		}
		cleared, err := release.Declare(ctx, st, release.DeclareRequest{Product: "brama", Host: "host1", Clear: true, Reason: "unpin"})
		if err != nil || cleared.Declared != nil || cleared.Previous == nil || !cleared.Previous.Pin {
			t.Fatalf("clear: %+v, %v", cleared, err)
		}
		h, _ := registry.History(ctx, st)
		var reasons []string
		for _, m := range h {
			reasons = append(reasons, m.Reason)
		}
		if strings.Join(reasons, ",") != "fixture,pin host1,unpin" {
			t.Fatalf("history reasons %v", reasons)
		}
	})

	// The protection of the fleet: declared versions, and images hosts'
	// beacons record as active or backup.
	t.Run("FleetProtectionReadsDeclaredVersionsAndBeacons", func(t *testing.T) {
		st := open(t)
		doc := &registry.Document{Version: 1, Releases: map[string]registry.ReleaseDecl{"brama": {Version: "1.4.3"}},
			Targets: []registry.Target{{Name: "host1", OS: registry.OSLinux, Releases: map[string]registry.ReleaseDecl{"brama": {Version: "1.4.2", Pin: true}}}}}
		if _, err := registry.Push(ctx, st, doc, 0, "fixture"); err != nil {
			t.Fatal(err)
		}
		active, backup := digestOf([]byte("a")), digestOf([]byte("b"))
		b1, _ := json.Marshal(map[string]any{"kind": "stado.beacon", "releases": map[string]any{"state": "read", "products": []any{
			map[string]any{"product": "brama", "active": map[string]string{"version": "1.4.1", "sha256": active}, "backup": map[string]string{"version": "1.4.0", "sha256": backup}}}}})
		mustPut(t, st, store.BeaconPrefix+"host1", b1)
		mustPut(t, st, store.BeaconPrefix+"host2", []byte(`{"kind":"stado.beacon"}`))
		p, err := release.FleetProtection(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			version, sha string
			want         bool
		}{
			{"1.4.3", "x", true}, {"1.4.2", "x", true}, {"1.4.1", active, true}, {"1.4.0", backup, true}, {"1.3.0", "x", false},
		} {
			if got := p.Protected("brama", c.version, c.sha); got != c.want {
				t.Errorf("Protected(brama %s %s) = %v", c.version, c.sha, got)
			}
		}
		mustPut(t, st, store.BeaconPrefix+"host3", []byte(`{"releases": 7}`))
		if _, err := release.FleetProtection(ctx, st); !refusal.Is(err, refusal.UnreadableBeacon) || !strings.Contains(err.Error(), "host3") {
			t.Fatalf("unreadable releases field: %v, want unreadable_beacon naming host3", err)
		}
		// A host that could not read its own release state protects
		// nothing we know of: prune refuses rather than guess.
		mustPut(t, st, store.BeaconPrefix+"host3", []byte(`{"releases": {"state": "unreadable", "cause": "permission denied"}}`))
		if _, err := release.FleetProtection(ctx, st); !refusal.Is(err, refusal.UnreadableBeacon) || !strings.Contains(err.Error(), "permission denied") {
			t.Fatalf("a host's unreadable release state: %v, want unreadable_beacon with its cause", err)
		}
	})
}

// ChunkPlusSome is a file of two chunks, the second a short one.
const ChunkPlusSome = release.ChunkSize + 1000

func mustPut(t *testing.T, st store.Store, key string, value []byte) {
	t.Helper()
	if _, err := st.Put(context.Background(), key, value, store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
}
