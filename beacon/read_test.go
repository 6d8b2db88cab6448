package beacon

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

func fleet() *registry.Document {
	return &registry.Document{
		Version:         1,
		ServiceResolver: registry.ServiceResolver{RefreshSeconds: 5},
		Targets: []registry.Target{
			{Name: "host1", SSH: registry.SSH{Address: "127.0.1.1"}, OS: "linux", Services: []registry.Service{
				{Name: "web", Unit: "web.service", Program: "/usr/local/bin/web"},
				{Name: "old", Unit: "old.service", UnitPath: "/etc/systemd/system/old.service"},
			}},
			{Name: "host2", SSH: registry.SSH{Address: "127.0.1.2"}, OS: "linux", Services: []registry.Service{
				{Name: "web", Unit: "web.service", Program: "/usr/local/bin/web"},
			}},
			{Name: "host3", SSH: registry.SSH{Address: "127.0.1.3"}, OS: "linux", Services: []registry.Service{
				{Name: "web", Unit: "web.service", Program: "/usr/local/bin/web"},
			}},
		},
	}
}

func newStore(t *testing.T) store.Store {
	t.Helper()
	st, err := store.OpenFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func publish(t *testing.T, st store.Store, b Beacon) {
	t.Helper()
	b.Kind, b.Version = Kind, FormatVersion
	data, _ := json.Marshal(b)
	if _, err := st.Put(context.Background(), store.BeaconPrefix+b.Host, data, store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
}

func exit(n int) *int { return &n }

func seeded(t *testing.T) store.Store {
	st := newStore(t)
	if _, err := registry.Push(context.Background(), st, fleet(), 0, "test"); err != nil {
		t.Fatal(err)
	}
	// host1: fresh, web active, old failing, one undeclared unit.
	publish(t, st, Beacon{Host: "host1", Pass: 4, At: t0.Add(-5 * time.Second), IntervalSeconds: 5, StaleAfterSeconds: 15,
		Units: []UnitReport{
			{Service: "web", Unit: "web.service", State: StateActive, PID: 42},
			{Service: "old", Unit: "old.service", State: StateFailing, LastExit: exit(3), Starts: 7, Sentence: "old.service runs no process: its last run exited 3 and its supervisor has started it 7 time(s)", LastStderr: "boom"},
		},
		Undeclared: []UnitReport{{Unit: "stray.service", State: StateActive, PID: 77}},
	})
	// host2: stale (60 s old, bound 15 s) although it said active.
	publish(t, st, Beacon{Host: "host2", Pass: 9, At: t0.Add(-60 * time.Second), IntervalSeconds: 5, StaleAfterSeconds: 15,
		Units: []UnitReport{{Service: "web", Unit: "web.service", State: StateActive, PID: 43}}})
	// host3 never published.
	return st
}

func TestStaleBeaconReadsUnknownWithItsAgeNeverActive(t *testing.T) {
	v, err := LoadView(context.Background(), seeded(t), t0, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Row{}
	for _, r := range v.Rows("") {
		got[r.Host+"/"+r.Service] = r
	}
	cases := []struct {
		key, state, reason string
	}{
		// a fresh beacon's verdict is reported as is
		{"host1/web", StateActive, ""},
		// a failing unit keeps its evidence
		{"host1/old", StateFailing, ""},
		// a stale beacon never yields a confident state, and says its age
		{"host2/web", StateUnknown, "beacon is 1m0s old, stale after 15s"},
		// a host that never published is unknown too
		{"host3/web", StateUnknown, "no beacon from host3"},
	}
	for _, tc := range cases {
		r, ok := got[tc.key]
		if !ok {
			t.Fatalf("no row %s", tc.key)
		}
		if r.State != tc.state || r.Beacon.Reason != tc.reason {
			t.Errorf("%s: state %q reason %q, want %q %q", tc.key, r.State, r.Beacon.Reason, tc.state, tc.reason)
		}
	}
	if r := got["host2/web"]; r.PID != 0 || r.Beacon.AgeSeconds != 60 {
		t.Errorf("stale row carries pid %d age %v; want no pid and age 60", r.PID, r.Beacon.AgeSeconds)
	}
	if r := got["host1/old"]; r.LastExit == nil || *r.LastExit != 3 || r.Starts != 7 || r.LastStderr != "boom" || !r.Incomplete {
		t.Errorf("failing row lost evidence: %+v", r)
	}
}

func TestStaleAfterOverrideTrustsOrDistrustsBeacons(t *testing.T) {
	v, err := LoadView(context.Background(), seeded(t), t0, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range v.Rows("host2") {
		if r.State != StateActive {
			t.Fatalf("with a 2m bound a 60s beacon is fresh; got %q", r.State)
		}
	}
}

func TestUndeclaredListsOnlyFreshHostsUnits(t *testing.T) {
	v, _ := LoadView(context.Background(), seeded(t), t0, 0)
	rows := v.Undeclared("")
	if len(rows) != 1 || rows[0].Unit != "stray.service" || rows[0].Host != "host1" {
		t.Fatalf("undeclared = %+v", rows)
	}
}

func TestDoctorNamesEveryKindOfDrift(t *testing.T) {
	v, _ := LoadView(context.Background(), seeded(t), t0, 0)
	codes := map[string]bool{}
	for _, f := range v.Doctor() {
		codes[f.Host+":"+f.Code] = true
	}
	for _, want := range []string{"host1:failing", "host1:declaration_incomplete", "host1:undeclared", "host2:stale_beacon", "host3:no_beacon"} {
		if !codes[want] {
			t.Errorf("doctor did not report %s; got %v", want, codes)
		}
	}
	if codes["host2:missing"] || codes["host2:failing"] {
		t.Errorf("doctor judged a stale host's units: %v", codes)
	}
}

func TestHealthCountsVerdictsPerHost(t *testing.T) {
	v, _ := LoadView(context.Background(), seeded(t), t0, 0)
	hs := v.Health("")
	if len(hs) != 3 {
		t.Fatalf("%d hosts", len(hs))
	}
	if hs[0].Counts[StateActive] != 1 || hs[0].Counts[StateFailing] != 1 || hs[0].Undeclared != 1 {
		t.Errorf("host1 health %+v", hs[0])
	}
	if hs[1].Counts[StateUnknown] != 1 || !hs[1].Beacon.Stale {
		t.Errorf("host2 health %+v", hs[1])
	}
	if hs[2].Beacon.Present {
		t.Errorf("host3 has no beacon: %+v", hs[2])
	}
}

func TestUnreadableBeaconMakesItsHostUnknown(t *testing.T) {
	st := seeded(t)
	if _, err := st.Put(context.Background(), store.BeaconPrefix+"host1", []byte("{not json"), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	v, _ := LoadView(context.Background(), st, t0, 0)
	for _, r := range v.Rows("host1") {
		if r.State != StateUnknown || !strings.HasPrefix(r.Beacon.Reason, "beacon unreadable") {
			t.Fatalf("row %+v", r)
		}
	}
}

// The read half must never link the SSH client or the repair code: it has
// to answer while hosts are wedged.
func TestReadHalfDoesNotImportChannelOrRepair(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/wisent/stado/beacon").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		switch dep {
		case "github.com/wisent/stado/channel", "github.com/wisent/stado/channel/local", "github.com/wisent/stado/fleet",
			"github.com/wisent/stado/repair", "golang.org/x/crypto/ssh":
			t.Errorf("package beacon depends on %s", dep)
		}
	}
}
