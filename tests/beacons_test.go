package tests

import (
	"context"
	"encoding/json"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/store"
)

// storedBeacon reads host's beacon from the store as the read half would,
// or nil while there is none (or it cannot be decoded yet).
func storedBeacon(ctx context.Context, st store.Store, host string) *beacon.Beacon {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	obj, err := st.Get(ctx, store.BeaconPrefix+host)
	if err != nil {
		return nil
	}
	var b beacon.Beacon
	if json.Unmarshal(obj.Value, &b) != nil {
		return nil
	}
	return &b
}

// unitOf returns the report of service in b, or nil (also when b is nil).
func unitOf(b *beacon.Beacon, service string) *beacon.UnitReport {
	if b == nil {
		return nil
	}
	for i := range b.Units {
		if b.Units[i].Service == service {
			return &b.Units[i]
		}
	}
	return nil
}
