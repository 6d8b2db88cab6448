package catalog

import (
	"context"
	"errors"
	"testing"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

func TestPushWritesAValidSiteCatalogWithACompareAndSwap(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	good := []byte("version: 1\nsteps: {}\n")
	c, rev, err := Push(ctx, st, good, "good.yaml", -1)
	if err != nil || rev == 0 || c.SiteRevision() != rev {
		t.Fatalf("push: %v, revision %d", err, rev)
	}
	// a stale expected revision is a conflict
	if _, _, err := Push(ctx, st, good, "good.yaml", 0); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("stale push: %v, want a conflict", err)
	}
	// an invalid document is refused and nothing is written
	var invalid *registry.ValidationError
	if _, _, err := Push(ctx, st, []byte("version: 1\nbogus: true\n"), "bad.yaml", -1); !errors.As(err, &invalid) {
		t.Fatalf("invalid push: %v", err)
	}
	if loaded, err := Load(ctx, st); err != nil || loaded.SiteRevision() != rev {
		t.Fatalf("after the refusal: %v, revision %d, want %d", err, loaded.SiteRevision(), rev)
	}
}
