package hostprocess

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/release"
	"github.com/wisent/stado/store"
)

func TestTheHostChannelReadsReleaseStateWithoutAStoreAndActivationSaysWhyNot(t *testing.T) {
	root := t.TempDir()
	if err := release.WriteHostState(root, release.HostState{Products: map[string]release.ProductState{
		"brama": {Active: &release.Image{Product: "brama", Version: "1.4.3", SHA256: "ab"}}}}); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	m := Machine{
		Home:      home,
		Getenv:    func(k string) string { return map[string]string{"HOME": home, release.RootEnv: root}[k] },
		OpenStore: func(context.Context, string) (store.Store, error) { return nil, errors.New("no store named") },
		Now:       time.Now,
	}
	h := m.LocalHost()
	res, err := h.ReleaseState(context.Background(), release.StateRequest{})
	if err != nil || res.State.Products["brama"].Active.Version != "1.4.3" {
		t.Fatalf("state %+v %v, want brama 1.4.3 read from %s", res.State, err, root)
	}
	rh, closeFn, err := m.release(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	if _, err := rh.Source.Signed(context.Background(), "brama", "1.4.3", "linux", "amd64"); err == nil || !strings.Contains(err.Error(), "no store named") {
		t.Fatalf("%v, want the store's error", err)
	}
}
