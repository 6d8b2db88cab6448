package beacon

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/release"
	"github.com/wisent/stado/store"
)

func TestTheHostAPIServesAChunkFromItsImagesOrTheStoreByDigest(t *testing.T) {
	st := apiStore(t, nil)
	root := t.TempDir()
	images := release.ImagesDir(root)
	whole := []byte(strings.Repeat("a", 100) + strings.Repeat("b", 50))
	image := digestOf(whole)
	if err := os.MkdirAll(filepath.Join(images, image), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(images, image, "brama"), whole, 0o555); err != nil {
		t.Fatal(err)
	}
	second := digestOf(whole[100:])
	stored := []byte("a chunk only the store holds")
	if _, err := st.Put(context.Background(), ChunkPrefix+digestOf(stored), stored, store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	bad := []byte("bytes stored under another digest")
	if _, err := st.Put(context.Background(), ChunkPrefix+second, bad, store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer((&Runner{Host: "h1", Store: st, ReleaseRoot: root}).APIHandler())
	defer srv.Close()
	at := func(sha string, off, size int) string {
		return "/api/release/chunk?sha256=" + sha + "&image=" + image + "&offset=" + strconv.Itoa(off) + "&size=" + strconv.Itoa(size)
	}
	for _, tc := range []struct {
		name string
		path string
		code int
		body string
	}{
		// the second chunk of an installed image, at its place
		{"from the image", at(second, 100, 50), 200, string(whole[100:])},
		// the same digest at the wrong place: the image holds other bytes
		// there, and the store's bytes under it are not that digest
		{"wrong place", at(second, 0, 50), 404, `"not_found"`},
		// a chunk the store holds
		{"from the store", "/api/release/chunk?sha256=" + digestOf(stored), 200, string(stored)},
		// nobody holds it
		{"absent", "/api/release/chunk?sha256=" + digestOf([]byte("x")), 404, `"not_found"`},
		// not a digest
		{"not a digest", "/api/release/chunk?sha256=../../registry", 400, `"bad_digest"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Get(srv.URL + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.code || !strings.Contains(string(b), tc.body) {
				t.Fatalf("%d %q, want %d with %q", resp.StatusCode, b, tc.code, tc.body)
			}
		})
	}
}

func TestPeerAPIsAreTheOtherHostsThatRunStado(t *testing.T) {
	stado := registry.Service{Name: "stado", Unit: "stado.service", Program: "/usr/local/bin/stado", Product: "stado"}
	doc := &registry.Document{Version: 1, Targets: []registry.Target{
		{Name: "h1", OS: registry.OSLinux, SSH: registry.SSH{Address: "127.0.1.1"}, Services: []registry.Service{stado}},
		{Name: "h2", OS: registry.OSLinux, SSH: registry.SSH{Address: "127.0.1.2"}},
		{Name: "h3", OS: registry.OSLinux, SSH: registry.SSH{Address: "127.0.1.3"}, Services: []registry.Service{stado}},
	}, Directory: []registry.DirectoryEntry{{Service: "stado", Host: "h3", Port: 7777}}}
	peers := PeerAPIs(context.Background(), apiStore(t, doc), "h1", 8)
	if len(peers) != 1 || peers[0].Host != "h3" || peers[0].URL != "http://127.0.1.3:7777" {
		t.Fatalf("peers %+v, want h3 only (h1 is self, h2 runs no stado)", peers)
	}
}
