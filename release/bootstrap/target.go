package bootstrap

import (
	"context"
	"errors"
	"fmt"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

// Target is host as the store's registry declares it (its SSH address, port
// and user), or a target of that name alone (ssh_config resolves it) when
// the store holds no registry or the registry no such target; with the
// stado version the registry declares for it ("" when none).
func Target(ctx context.Context, st store.Store, host string) (registry.Target, string, error) {
	doc, _, err := registry.Load(ctx, st)
	if errors.Is(err, store.ErrNotFound) {
		return registry.Target{Name: host}, "", nil
	}
	if err != nil {
		return registry.Target{}, "", fmt.Errorf("read registry: %w", err)
	}
	declared, _ := doc.DeclaredRelease(host, "stado")
	if t, ok := doc.Target(host); ok {
		return *t, declared.Version, nil
	}
	return registry.Target{Name: host}, declared.Version, nil
}
