package convergence

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/fleet"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

// The evidence of a converge: host1 declares api and runs it, host2's
// beacon is stale, host3 runs api.service undeclared and host4 published
// no beacon. Converge sees host3's copy as a sighting, host2 and host4 as
// unseen, and the registry's caps.
func TestEvidenceReadsSightingsUnseenHostsAndTheRegistrysCaps(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	st, err := store.OpenFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	api := registry.Service{Name: "api", Unit: "api.service", Program: "/usr/local/bin/api"}
	doc := &registry.Document{Version: 1, Autonomy: registry.Autonomy{MaxConcurrent: 3}}
	for _, h := range []string{"host1", "host2", "host3", "host4"} {
		tg := registry.Target{Name: h, OS: registry.OSLinux, SSH: registry.SSH{Address: "127.0.0.1", Port: 1}}
		if h != "host3" {
			tg.Services = []registry.Service{api}
		}
		doc.Targets = append(doc.Targets, tg)
	}
	if _, err := registry.Push(ctx, st, doc, 0, "fixture"); err != nil {
		t.Fatal(err)
	}
	for _, b := range []beacon.Beacon{
		{Host: "host1", At: now.Add(-time.Second), Units: []beacon.UnitReport{{Service: "api", Unit: "api.service", State: beacon.StateActive, PID: 1001}}},
		{Host: "host2", At: now.Add(-time.Hour), Units: []beacon.UnitReport{{Service: "api", Unit: "api.service", State: beacon.StateActive, PID: 1002}}},
		{Host: "host3", At: now.Add(-time.Second), Undeclared: []beacon.UnitReport{{Unit: "api.service", State: beacon.StateActive, PID: 1003}}},
	} {
		b.Kind, b.Version, b.Pass, b.IntervalSeconds, b.StaleAfterSeconds = beacon.Kind, beacon.FormatVersion, 1, 5, 15
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Put(ctx, store.BeaconPrefix+b.Host, data, store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	f, err := fleet.Open(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := fleet.ConvergeOptions{Name: "api"}
	if err := Evidence(ctx, f, beacon.Reading{Now: now, Store: "test"}, &o); err != nil {
		t.Fatal(err)
	}
	want := []fleet.Sighting{{Host: "host3", Unit: "api.service", State: beacon.StateActive, PID: 1003}}
	if !slices.Equal(o.Sightings, want) {
		t.Errorf("sightings %+v, want %+v", o.Sightings, want)
	}
	if !slices.Equal(o.Unseen, []string{"host2", "host4"}) {
		t.Errorf("unseen %v, want host2 and host4", o.Unseen)
	}
	if caps, _ := fleet.ResolveCaps(doc.Autonomy, fleet.Requested{}); o.Caps != caps || o.Caps.MaxConcurrent != 3 {
		t.Errorf("caps %+v, want the registry's %+v", o.Caps, caps)
	}
}
