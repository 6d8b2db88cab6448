package fleet_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/fleet"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/units"
)

// settlingHost answers a restart as a remote host does: the request goes
// out (channel.ReleaseSlot, as the SSH client does once it is sent), then
// the unit settles, which ends once every host of the fleet is settling at
// the same time (or after a while, for the test to fail on).
type settlingHost struct {
	channel.Host
	name  string
	fleet *settlingFleet
}

type settlingFleet struct {
	mu       sync.Mutex
	settling int
	peak     int
	n        int
	all      chan struct{}
}

func (h *settlingHost) OS() string { return "linux" }

func (h *settlingHost) UnitRestart(ctx context.Context, u channel.UnitRef) (units.Verdict, error) {
	channel.ReleaseSlot(ctx)
	f := h.fleet
	f.mu.Lock()
	f.settling++
	f.peak = max(f.peak, f.settling)
	if f.settling == f.n {
		close(f.all)
	}
	f.mu.Unlock()
	select {
	case <-f.all:
	case <-time.After(5 * time.Second): // only when hosts wait in waves
	}
	f.mu.Lock()
	f.settling--
	f.mu.Unlock()
	return units.Verdict{Unit: u.Unit, State: units.StateActive, PID: len(h.name)}, nil
}

func TestRestartOnManyHostsSettlesThemAllInOneWaveWhateverParallel(t *testing.T) {
	const n, parallel = 40, 4
	doc := &registry.Document{Version: 1}
	for i := range n {
		doc.Targets = append(doc.Targets, registry.Target{Name: fmt.Sprintf("h%d", i), OS: "linux",
			Services: []registry.Service{{Name: "api", Unit: "api.service", Scope: registry.ScopeSystem, Program: "/usr/local/bin/api"}}})
	}
	sf := &settlingFleet{n: n, all: make(chan struct{})}
	f := &fleet.Fleet{Doc: doc, Parallel: parallel, Connect: func(t registry.Target) channel.Host {
		return &settlingHost{name: t.Name, fleet: sf}
	}}
	list, err := f.Restart(context.Background(), fleet.RestartOptions{Name: "api"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sf.peak != n {
		t.Fatalf("at most %d of %d hosts settled at once with parallel %d, want all in one wave", sf.peak, n, parallel)
	}
	for i, r := range list {
		if r.Host != doc.Targets[i].Name || !r.OK || r.Verdict == nil || r.Verdict.PID != len(r.Host) {
			t.Fatalf("outcome %d = %+v, want %s's own, in input order", i, r, doc.Targets[i].Name)
		}
	}
}
