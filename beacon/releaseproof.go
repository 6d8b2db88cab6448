package beacon

import (
	"context"
	"fmt"
	"time"

	"github.com/wisent/stado/store"
)

// PublishedVersion reads host's beacon from the store and returns the stado
// version that published it, when it was published at or after since: the
// proof that a stado activated on host runs and publishes. A beacon that is
// missing, unreadable or older than since is an error naming why.
func PublishedVersion(ctx context.Context, st store.Store, host string, since time.Time) (string, error) {
	key := store.BeaconPrefix + host
	obj, err := st.Get(ctx, key)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", key, err)
	}
	b, err := DecodeBeacon(host, obj.Value)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", key, err)
	}
	if b.At.Before(since) {
		return "", fmt.Errorf("the newest beacon of %s (stado %s) is from %s, before %s", host, b.StadoVersion, b.At.UTC().Format(time.RFC3339), since.UTC().Format(time.RFC3339))
	}
	return b.StadoVersion, nil
}
