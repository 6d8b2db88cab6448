package cli

import (
	"errors"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/store"
	"github.com/wisent/stado/store/etcdstore"
)

// viewRefusal says why the read half has nothing to show. A store without
// a registry (a mistyped URL, a store never pushed to) is a refusal naming
// the store and the command that creates a registry: an empty table would
// read as a fleet with nothing declared. An invalid stored document keeps
// its *registry.ValidationError (exit 3, its violations in --json).
// Anything else is returned as it is.
func viewRefusal(env *Env, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return &Refusal{
			Code:    refusal.NotFound,
			Message: "store " + etcdstore.Redact(env.StoreURL) + " holds no registry",
			Hint:    "check --store (or $STADO_STORE); to create a registry there: stado registry push FILE --store " + etcdstore.Redact(env.StoreURL),
			Err:     err,
		}
	}
	return err
}
