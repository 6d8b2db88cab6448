package convergence

import (
	"context"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/fleet"
)

// Evidence fills in o's Caps (the registry's autonomy caps as f read them,
// nothing asked below them), Sightings and Unseen (read from f's store as r
// reads beacons). Its errors are the store's and the beacons' reader's.
func Evidence(ctx context.Context, f *fleet.Fleet, r beacon.Reading, o *fleet.ConvergeOptions) error {
	caps, err := fleet.ResolveCaps(f.Doc.Autonomy, fleet.Requested{})
	if err != nil {
		return err
	}
	seen, err := beacon.List(ctx, f.Store, beacon.ListQuery{Reading: r, Undeclared: true})
	if err != nil {
		return err
	}
	o.Caps, o.Unseen = caps, seen.StaleHosts
	for _, row := range seen.Services {
		o.Sightings = append(o.Sightings, fleet.Sighting{Host: row.Host, Unit: row.Unit, State: row.State, PID: row.PID})
	}
	return nil
}
