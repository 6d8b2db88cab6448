package etcdstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
	"github.com/wisent/stado/store/storetest"
	etcdtest "github.com/wisent/stado/tests/etcd"
)

// hostPorts turns the cluster's client URLs into the HOST:PORT list a store
// URL carries.
func hostPorts(c *etcdtest.Cluster) string {
	var eps []string
	for _, u := range c.Endpoints() {
		eps = append(eps, strings.TrimPrefix(u, "http://"))
	}
	return strings.Join(eps, ",")
}

var prefixes atomic.Int64

// openFresh opens a store on c under a prefix no other test uses, so it
// starts empty; it is closed when t ends.
func openFresh(t testing.TB, c *etcdtest.Cluster) *Store {
	t.Helper()
	url := fmt.Sprintf("etcd://%s/test/%d", hostPorts(c), prefixes.Add(1))
	st, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	t.Cleanup(func() { st.Close() })
	return st.(*Store)
}

func TestConformanceOnASingleMember(t *testing.T) {
	c := etcdtest.Start(t, 1)
	storetest.Run(t, func(t *testing.T) store.Store { return openFresh(t, c) })
}

// TestListReadsEveryPageAtOneRevision shrinks the page to 3 keys: a
// listing of 10 keys takes 4 pages, keeps key order, leaves out keys of
// neighbouring prefixes.
func TestListReadsEveryPage(t *testing.T) {
	c := etcdtest.Start(t, 1)
	st := openFresh(t, c)
	st.pageSize = 3
	ctx := context.Background()
	var want []string
	for i := 0; i < 10; i++ {
		k := fmt.Sprintf("beacons/host%02d", i)
		want = append(want, k)
		if _, err := st.Put(ctx, k, []byte(k), store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"beaconsx", "beacon", "registry/document"} {
		if _, err := st.Put(ctx, k, []byte("other"), store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := st.List(ctx, "beacons/")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("List = %d objects, want %d", len(got), len(want))
	}
	for i, o := range got {
		if o.Key != want[i] || string(o.Value) != want[i] {
			t.Fatalf("List[%d] = %q %q, want %q", i, o.Key, o.Value, want[i])
		}
	}

}

// TestLargeValuesAreStoredCompressedSmallOnesVerbatim: a registry-sized
// value (2.4 MB, above etcd's 1.5 MiB request limit) is written and read
// back byte for byte because it is stored compressed; a beacon-sized value
// is stored as it is, so etcdctl shows it; a value that starts with the
// marker is escaped and still reads back as written.
func TestLargeValuesAreStoredCompressedSmallOnesVerbatim(t *testing.T) {
	c := etcdtest.Start(t, 1)
	st := openFresh(t, c)
	ctx := context.Background()
	large := bytes.Repeat([]byte(`{"name":"svc1","unit":"svc1.service","program":"/usr/local/bin/svc"},`), 35000)
	small := []byte(`{"kind":"stado.beacon","version":1}`)
	tricky := append([]byte(valueMarker), 'z', 1, 2, 3)
	for k, v := range map[string][]byte{"large": large, "small": small, "tricky": tricky} {
		if _, err := st.Put(ctx, k, v, store.PutOptions{}); err != nil {
			t.Fatalf("put %s (%d bytes): %v", k, len(v), err)
		}
		obj, err := st.Get(ctx, k)
		if err != nil || !bytes.Equal(obj.Value, v) {
			t.Fatalf("get %s: %d bytes, %v; want the %d bytes written", k, len(obj.Value), err, len(v))
		}
	}
	if raw := rawGet(t, st, "large").Kvs[0].Value; !bytes.HasPrefix(raw, []byte(valueMarker+"z")) || len(raw) > len(large)/10 {
		t.Fatalf("large value stored as %d bytes starting %q, want compressed behind the marker", len(raw), raw[:min(len(raw), 16)])
	}
	if raw := rawGet(t, st, "small").Kvs[0].Value; !bytes.Equal(raw, small) {
		t.Fatalf("small value stored as %q, want verbatim", raw)
	}
}

// TestWriteAboveEtcdLimitIsRefusedNamingTheLimit: 3 MiB of random bytes do
// not compress; etcd refuses the write and the error says which limit.
func TestWriteAboveEtcdLimitIsRefusedNamingTheLimit(t *testing.T) {
	c := etcdtest.Start(t, 1)
	st := openFresh(t, c)
	big := make([]byte, 3<<20)
	rand.Read(big)
	_, err := st.Put(context.Background(), "big", big, store.PutOptions{})
	if err == nil || !strings.Contains(err.Error(), "--max-request-bytes") {
		t.Fatalf("put of 3 MiB random: %v, want a refusal naming --max-request-bytes", err)
	}
	if _, err := st.Get(context.Background(), "big"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after refused put: %v, want ErrNotFound", err)
	}
}

// TestTTLPutsRefreshOneLeasePerKey: three TTL puts of one key ride on one
// lease, whose countdown each put restarts, so a key refreshed more often
// than its TTL outlives the TTL many times; the cluster holds one lease
// for it. A put without TTL detaches the key from its lease.
func TestTTLPutsRefreshOneLeasePerKey(t *testing.T) {
	c := etcdtest.Start(t, 1)
	st := openFresh(t, c)
	ctx := context.Background()
	before := leaseCount(t, st)
	ttl := 3 * time.Second
	var lease int64
	deadline := time.Now().Add(2 * ttl)
	for n := 0; time.Now().Before(deadline); n++ {
		if _, err := st.Put(ctx, "beacons/h1", []byte(fmt.Sprint(n)), store.PutOptions{TTL: ttl}); err != nil {
			t.Fatal(err)
		}
		kv := rawGet(t, st, "beacons/h1").Kvs
		if len(kv) != 1 || kv[0].Lease == 0 {
			t.Fatalf("put %d: key %v, want it present with a lease", n, kv)
		}
		if lease != 0 && kv[0].Lease != lease {
			t.Fatalf("put %d rode on lease %x, earlier puts on %x: want one lease per key", n, kv[0].Lease, lease)
		}
		lease = kv[0].Lease
		time.Sleep(300 * time.Millisecond)
	}
	if after := leaseCount(t, st); after != before+1 {
		t.Fatalf("cluster holds %d leases, had %d: want exactly one more", after, before)
	}
	var ttlResp struct {
		GrantedTTL int64 `json:"grantedTTL,string"`
	}
	if err := post(ctx, st.c.urls[0], "/v3/lease/timetolive", leaseKeepAliveRequest{ID: lease}, &ttlResp); err != nil || ttlResp.GrantedTTL != 3 {
		t.Fatalf("lease granted TTL %v (%v), want 3s", ttlResp, err)
	}
	if _, err := st.Put(ctx, "beacons/h1", []byte("kept"), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if kv := rawGet(t, st, "beacons/h1").Kvs; kv[0].Lease != 0 {
		t.Fatalf("put without TTL left lease %x on the key", kv[0].Lease)
	}
}

// TestLeaseLostBetweenWritesIsGrantedAgain: when the held lease is gone
// (revoked here; expired after a long pause in life), the next TTL put
// grants a new one instead of failing.
func TestLeaseLostBetweenWritesIsGrantedAgain(t *testing.T) {
	c := etcdtest.Start(t, 1)
	st := openFresh(t, c)
	ctx := context.Background()
	opts := store.PutOptions{TTL: 10 * time.Second}
	if _, err := st.Put(ctx, "beacons/h1", []byte("1"), opts); err != nil {
		t.Fatal(err)
	}
	first := rawGet(t, st, "beacons/h1").Kvs[0].Lease
	mustPost(t, st.c.urls[0], "/v3/lease/revoke", leaseKeepAliveRequest{ID: first}, &struct{}{})
	if _, err := st.Put(ctx, "beacons/h1", []byte("2"), opts); err != nil {
		t.Fatalf("put after the lease was revoked: %v", err)
	}
	kv := rawGet(t, st, "beacons/h1").Kvs
	if len(kv) != 1 || kv[0].Lease == 0 || kv[0].Lease == first || string(kv[0].Value) != "2" {
		t.Fatalf("after re-grant: %v, want value 2 on a new lease", kv)
	}
}

// TestRegistryHistoryOnEtcd: every Update writes a history entry keyed by
// the etcd revision; History lists them oldest first and LoadRevision
// reads each one back.
func TestRegistryHistoryOnEtcd(t *testing.T) {
	c := etcdtest.Start(t, 1)
	st := openFresh(t, c)
	ctx := context.Background()
	var revs []int64
	for i := 0; i < 3; i++ {
		_, m, err := registry.Update(ctx, st, fmt.Sprintf("step %d", i), incrementCounter)
		if err != nil {
			t.Fatal(err)
		}
		revs = append(revs, m.Revision)
	}
	h, err := registry.History(ctx, st)
	if err != nil || len(h) != 3 {
		t.Fatalf("History = %v, %v; want 3 entries", h, err)
	}
	for i, m := range h {
		if m.Revision != revs[i] || m.Reason != fmt.Sprintf("step %d", i) {
			t.Fatalf("History[%d] = %+v, want revision %d reason step %d", i, m, revs[i], i)
		}
		d, _, err := registry.LoadRevision(ctx, st, m.Revision)
		if err != nil || d.ServiceResolver.RefreshSeconds != i+1 {
			t.Fatalf("LoadRevision %d: counter %v, %v; want %d", m.Revision, d, err, i+1)
		}
	}
}

// TestAuthenticatedStore enables auth on a cluster: a store URL with the
// user and the password from STADO_ETCD_PASSWORD reads and writes; a wrong
// password fails, and the error does not repeat it.
func TestAuthenticatedStore(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	const pw = "s3cret-pw"
	enableAuth(t, c.ClientURL(0), pw)
	cfg, err := ParseURL("etcd://root@"+hostPorts(c)+"/authed", func(k string) string {
		if k == PasswordEnv {
			return pw
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Put(ctx, "k", []byte("v"), store.PutOptions{}); err != nil {
		t.Fatalf("authenticated put: %v", err)
	}
	if obj, err := st.Get(ctx, "k"); err != nil || string(obj.Value) != "v" {
		t.Fatalf("authenticated get: %v %v", obj, err)
	}
	if strings.Contains(cfg.String(), pw) {
		t.Fatalf("Config.String() = %q shows the password", cfg.String())
	}

	cfg.Password = "wrong-pw-1234"
	cfg.RequestTimeout = 10 * time.Second
	bad, err := Open(ctx, cfg)
	if err == nil {
		defer bad.Close()
		_, err = bad.Get(ctx, "k")
	}
	if err == nil {
		t.Fatal("wrong password: no error")
	}
	if strings.Contains(err.Error(), "wrong-pw-1234") {
		t.Fatalf("error repeats the password: %v", err)
	}
}

// enableAuth adds user root with password pw and role root to the
// cluster at baseURL and turns auth on.
func enableAuth(t *testing.T, baseURL, pw string) {
	t.Helper()
	mustPost(t, baseURL, "/v3/auth/role/add", map[string]string{"name": "root"}, &struct{}{})
	mustPost(t, baseURL, "/v3/auth/user/add", map[string]string{"name": "root", "password": pw}, &struct{}{})
	mustPost(t, baseURL, "/v3/auth/user/grant", map[string]string{"user": "root", "role": "root"}, &struct{}{})
	mustPost(t, baseURL, "/v3/auth/enable", struct{}{}, &struct{}{})
}

// incrementCounter adds one to the counter kept in
// service_resolver.refresh_seconds, as the registry's own tests do.
func incrementCounter(d *registry.Document) error {
	d.ServiceResolver.RefreshSeconds++
	return nil
}
