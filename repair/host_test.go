package repair

import (
	"context"
	"errors"
	"testing"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

func TestHostProcessContributorsRefuseABadSiteCatalogOnly(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h := HostProcess{Store: st, Host: "h1", Home: t.TempDir(), Dialer: &channel.Dialer{}}
	cs, stop, err := h.Contributors(ctx)
	if err != nil || len(cs) != 2 {
		t.Fatalf("contributors: %d, %v", len(cs), err)
	}
	if _, ok := cs[0].(*Answerer); !ok {
		t.Errorf("first contributor %T, want the answerer", cs[0])
	}
	if _, ok := cs[1].(*Peer); !ok {
		t.Errorf("second contributor %T, want the peer", cs[1])
	}
	stop()
	if _, err := st.Put(ctx, store.CatalogKey, []byte("version: 1\nbogus: true\n"), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	var invalid *registry.ValidationError
	if _, _, err := h.Contributors(ctx); !errors.As(err, &invalid) {
		t.Fatalf("bad site catalog: %v, want its validation error", err)
	}
}
