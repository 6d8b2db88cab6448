package beacon

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

func apiStore(t *testing.T, doc *registry.Document) store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if doc != nil {
		if _, err := registry.Push(context.Background(), st, doc, 0, "test"); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

func TestListenAddressFollowsTheDirectoryThenTheCatalog(t *testing.T) {
	stado := registry.Service{Name: "stado", Unit: "stado.service", Program: "/usr/local/bin/stado", Product: "stado"}
	doc := &registry.Document{Version: 1, Targets: []registry.Target{
		{Name: "h1", OS: registry.OSLinux, SSH: registry.SSH{Address: "127.0.1.1"}, Services: []registry.Service{stado}},
		{Name: "h2", OS: registry.OSLinux, SSH: registry.SSH{Address: "127.0.1.2"}},
	}}
	ctx := context.Background()
	// the catalog's port of the stado product, when the directory says nothing
	addr := ListenAddress(ctx, apiStore(t, doc), "h1")
	if host, port, err := net.SplitHostPort(addr); err != nil || host != "127.0.1.1" || port == "" || port == "0" {
		t.Fatalf("catalog port: %q", addr)
	}
	// the directory's port wins
	doc.Directory = []registry.DirectoryEntry{{Service: "stado", Host: "h1", Port: 7777}}
	if addr := ListenAddress(ctx, apiStore(t, doc), "h1"); addr != "127.0.1.1:7777" {
		t.Fatalf("directory port: %q", addr)
	}
	// no stado declaration, no such host, no registry: no listener
	for _, c := range []struct {
		st   store.Store
		host string
	}{{apiStore(t, doc), "h2"}, {apiStore(t, doc), "h9"}, {apiStore(t, nil), "h1"}} {
		if addr := ListenAddress(ctx, c.st, c.host); addr != "" {
			t.Errorf("%s: %q, want none", c.host, addr)
		}
	}
}

func TestAPIHandlerServesReleaseObjectsFromTheStore(t *testing.T) {
	st := apiStore(t, nil)
	if _, err := st.Put(context.Background(), store.ReleasePrefix+"brama/1.2.0", []byte("bytes"), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer((&Runner{Host: "h1", Store: st, Version: "v"}).APIHandler())
	defer srv.Close()
	cases := []struct {
		path string
		code int
		body string
	}{
		// the process says it runs
		{"/healthz", 200, `"host":"h1"`},
		// a stored object, its bytes as they are
		{"/api/release/object?uri=stado://releases/brama/1.2.0", 200, "bytes"},
		// none stored
		{"/api/release/object?uri=stado://releases/brama/9", 404, `"not_found"`},
		// not a release URI, or one that climbs
		{"/api/release/object?uri=http://x", 400, `"bad_uri"`},
		{"/api/release/object?uri=stado://releases/../registry/document", 400, `"bad_uri"`},
	}
	for _, c := range cases {
		resp, err := http.Get(srv.URL + c.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code || !strings.Contains(string(b), c.body) {
			t.Errorf("%s: %d %s, want %d with %s", c.path, resp.StatusCode, b, c.code, c.body)
		}
	}
}

func TestServeAPIRecordsAListenerItCannotOpen(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	r := &Runner{Host: "h1", Store: apiStore(t, nil)}
	r.ServeAPI(context.Background(), ln.Addr().String())()
	if len(r.lasting) != 1 || r.lasting[0].Code != "listen_failed" {
		t.Fatalf("lasting refusals %+v, want listen_failed", r.lasting)
	}
}

// gatedStore is a store whose Get of a release either fails or blocks until
// its request ends, as a store holding every read does.
type gatedStore struct {
	store.Store
	fail  error
	block bool
}

func (g *gatedStore) Get(ctx context.Context, key string) (store.Object, error) {
	if g.block {
		<-ctx.Done()
		return store.Object{}, ctx.Err()
	}
	if g.fail != nil {
		return store.Object{}, g.fail
	}
	return g.Store.Get(ctx, key)
}

// stado's own question (the probe object, never published) reads successful
// on a healthy host only because the store was read: a failed read is a 503
// and a read that hangs leaves the question unanswered.
func TestProbeObjectAbsenceIsASuccessfulAnswerOnlyAfterTheStoreWasRead(t *testing.T) {
	probe := "/api/release/object?uri=stado://releases/" + ProbeRelease
	get := func(st store.Store, timeout time.Duration) (int, string, error) {
		srv := httptest.NewServer((&Runner{Host: "h1", Store: st}).APIHandler())
		defer srv.Close()
		c := &http.Client{Timeout: timeout}
		resp, err := c.Get(srv.URL + probe)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	healthy := apiStore(t, nil)
	code, body, err := get(healthy, 5*time.Second)
	if err != nil || code != 200 || !strings.Contains(body, `"present":false`) {
		t.Fatalf("healthy store: %d %s %v, want 200 saying absent", code, body, err)
	}
	// any other absent object is still a 404
	srv := httptest.NewServer((&Runner{Host: "h1", Store: healthy}).APIHandler())
	resp, err := http.Get(srv.URL + "/api/release/object?uri=stado://releases/other")
	srv.Close()
	if err != nil || resp.StatusCode != 404 {
		t.Fatalf("another absent object: %v %v, want 404", resp, err)
	}
	resp.Body.Close()
	code, body, err = get(&gatedStore{Store: healthy, fail: errors.New("disk on fire")}, 5*time.Second)
	if err != nil || code != 503 || !strings.Contains(body, "store_unreadable") {
		t.Fatalf("failing store: %d %s %v, want 503 store_unreadable", code, body, err)
	}
	if code, body, err = get(&gatedStore{Store: healthy, block: true}, 300*time.Millisecond); err == nil {
		t.Fatalf("hanging store answered %d %s; the question must stay unanswered", code, body)
	}
}
