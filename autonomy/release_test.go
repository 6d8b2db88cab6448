package autonomy

import (
	"context"
	"encoding/json"
	"github.com/wisent/stado/store"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/fleet"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/release"
	"github.com/wisent/stado/release/rollout"
	"github.com/wisent/stado/units"
)

var relNow = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// releaseFleet is hosts h1..hn declaring service brama of product brama,
// the registry declaring brama 1.4.3 fleet-wide.
func releaseFleet(names ...string) *registry.Document {
	doc := &registry.Document{Version: 1, Releases: map[string]registry.ReleaseDecl{"brama": {Version: "1.4.3"}}}
	for _, n := range names {
		s := svc("brama")
		s.Product = "brama"
		doc.Targets = append(doc.Targets, registry.Target{Name: n, OS: "linux", Services: []registry.Service{s}})
	}
	return doc
}

func relBeacon(host string, at time.Time, rel *beacon.Releases) *beacon.Beacon {
	return &beacon.Beacon{Kind: beacon.Kind, Version: beacon.FormatVersion, Host: host, At: at, IntervalSeconds: 15, StaleAfterSeconds: 45, Releases: rel}
}

func bramaActive(version string) *beacon.Releases {
	pr := beacon.ProductRelease{Product: "brama"}
	if version != "" {
		pr.Active = &beacon.ReleaseImage{Version: version, SHA256: "sha-" + version}
	}
	return &beacon.Releases{State: beacon.ReleasesRead, Products: []beacon.ProductRelease{pr}}
}

// planReleases plans doc from beacons through the same join the cycle
// makes (rollout.ShowFleet over the declarations), every unit active.
func planReleases(doc *registry.Document, beacons map[string]*beacon.Beacon) []Row {
	v := &beacon.View{Document: doc, Now: relNow, Beacons: beacons}
	vr := &fleet.VerifyResult{}
	for _, t := range doc.Targets {
		h := reach(check("brama", units.StateActive))
		h.Host = t.Name
		vr.Hosts = append(vr.Hosts, h)
	}
	return Plan(Input{Doc: doc, Verify: vr, Releases: rollout.ShowFleet(v, rollout.DeclarationsOf(doc), "")})
}

func releaseRows(rows []Row) map[string]Row {
	out := map[string]Row{}
	for _, r := range rows {
		if r.Product != "" {
			out[r.Host] = r
		}
	}
	return out
}

func TestPlanWouldActivateTheDeclaredVersionWhereAnotherIsActive(t *testing.T) {
	doc := releaseFleet("h1", "h2")
	rows := releaseRows(planReleases(doc, map[string]*beacon.Beacon{
		"h1": relBeacon("h1", relNow.Add(-5*time.Second), bramaActive("1.4.2")),
		"h2": relBeacon("h2", relNow.Add(-5*time.Second), bramaActive("")),
	}))
	for host, want := range map[string]string{"h1": "would activate brama 1.4.3, now 1.4.2", "h2": "would activate brama 1.4.3, now none"} {
		r, ok := rows[host]
		if !ok || r.Action != ActionConverge || r.Plan != want || r.Refusal != nil || !r.Acts() {
			t.Errorf("%s: %+v, want %q", host, r, want)
			continue
		}
		if r.Service != "brama" || r.Unit != "brama.service" || r.Evidence.Release == nil || r.Evidence.Release.Declared != "1.4.3" {
			t.Errorf("%s: row %+v evidence %+v", host, r, r.Evidence.Release)
		}
	}
}

func TestPlanGivesAConvergedProductNoRow(t *testing.T) {
	doc := releaseFleet("h1")
	rows := planReleases(doc, map[string]*beacon.Beacon{"h1": relBeacon("h1", relNow.Add(-5*time.Second), bramaActive("1.4.3"))})
	if len(rows) != 1 || rows[0].Product != "" || rows[0].Action != ActionNone {
		t.Fatalf("rows %+v, want the service's none row only", rows)
	}
}

func TestPlanRefusesAConvergeWithoutAFreshBeacon(t *testing.T) {
	doc := releaseFleet("h1", "h2")
	rows := releaseRows(planReleases(doc, map[string]*beacon.Beacon{"h1": relBeacon("h1", relNow.Add(-time.Hour), bramaActive("1.4.2"))}))
	for host, want := range map[string]string{"h1": "old", "h2": "no beacon from h2"} {
		r := rows[host]
		if r.Refusal == nil || r.Refusal.Code != CodeNoEvidence || !strings.Contains(r.Refusal.Message, want) || r.Action != "" {
			t.Errorf("%s: %+v, want no_evidence naming %q", host, r, want)
		}
	}
}

func TestPlanRefusesAConvergeWhenTheHostCannotReadItsReleaseState(t *testing.T) {
	doc := releaseFleet("h1")
	rows := releaseRows(planReleases(doc, map[string]*beacon.Beacon{"h1": relBeacon("h1", relNow,
		&beacon.Releases{State: beacon.ReleasesUnreadable, Cause: "release state /r/state.json: permission denied"})}))
	r := rows["h1"]
	if r.Refusal == nil || r.Refusal.Code != CodeNoEvidence || !strings.Contains(r.Refusal.Message, "permission denied") {
		t.Fatalf("%+v, want no_evidence with the host's reason", r)
	}
}

func TestPlanRefusesAConvergeOnAnUnreachableHost(t *testing.T) {
	doc := releaseFleet("h1")
	v := &beacon.View{Document: doc, Now: relNow, Beacons: map[string]*beacon.Beacon{"h1": relBeacon("h1", relNow, bramaActive("1.4.2"))}}
	vr := &fleet.VerifyResult{Hosts: []fleet.HostVerify{{Host: "h1", Stage: fleet.StageConnect, Error: &fleet.HostError{Message: "connection refused"}}}}
	r := releaseRows(Plan(Input{Doc: doc, Verify: vr, Releases: rollout.ShowFleet(v, rollout.DeclarationsOf(doc), "")}))["h1"]
	if r.Refusal == nil || r.Refusal.Code != CodeUnreachable || r.Refusal.Stage != fleet.StageConnect {
		t.Fatalf("%+v", r)
	}
}

// activatingHosts answer ReleaseActivate: activated, or (for the hosts in
// restore) restored with the proof's refusal. They count the calls.
type activatingHosts struct {
	mu      sync.Mutex
	calls   map[string][]release.ActivateRequest
	restore map[string]bool
}

type activatingHost struct {
	channel.Host
	name string
	f    *activatingHosts
}

func (h *activatingHost) ReleaseActivate(_ context.Context, req release.ActivateRequest) (release.ActivateResult, error) {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	h.f.calls[h.name] = append(h.f.calls[h.name], req)
	was := &release.Image{Product: req.Product, Version: "1.4.2", SHA256: "sha-1.4.2"}
	if h.f.restore[h.name] {
		return release.ActivateResult{Product: req.Product, Outcome: release.OutcomeRestored, Active: was,
			Activation: &release.Activation{Product: req.Product, Version: req.Version, Outcome: release.OutcomeRestored,
				Refusal:  "brama.service: restart did not prove a fresh pid on the activated image",
				Restored: &release.Proof{Version: "1.4.2", PID: 77, Exe: "/r/images/sha-1.4.2/brama"}}}, nil
	}
	return release.ActivateResult{Product: req.Product, Outcome: release.OutcomeActivated,
		Active: &release.Image{Product: req.Product, Version: req.Version, SHA256: "sha-" + req.Version}, Backup: was,
		Activation: &release.Activation{Product: req.Product, Version: req.Version, SHA256: "sha-" + req.Version, Outcome: release.OutcomeActivated,
			Unit: req.Unit, PIDAfter: 11, Exe: "/r/images/sha-" + req.Version + "/brama"}}, nil
}

func (f *activatingHosts) actor(doc *registry.Document) *FleetActor {
	conn := func(t registry.Target) channel.Host { return &activatingHost{name: t.Name, f: f} }
	return &FleetActor{Fleet: &fleet.Fleet{Doc: doc}, Connect: func() (fleet.Connector, func()) { return conn, func() {} },
		Now: func() time.Time { return relNow }}
}

func TestEnforceConvergesARowWithOneActivationAndRecordsIt(t *testing.T) {
	doc := releaseFleet("h1")
	f := &activatingHosts{calls: map[string][]release.ActivateRequest{}}
	rows := []Row{{Host: "h1", Service: "brama", Unit: "brama.service", Product: "brama", Action: ActionConverge, Plan: "would activate brama 1.4.3, now 1.4.2"}}
	failed, stopped := Enforce(context.Background(), rows, DefaultCaps, func(string) int { return 1 }, f.actor(doc))
	if failed != 0 || stopped != "" {
		t.Fatalf("failed %d, stopped %q", failed, stopped)
	}
	if n := len(f.calls["h1"]); n != 1 {
		t.Fatalf("%d activations, want 1", n)
	}
	if req := f.calls["h1"][0]; req.Product != "brama" || req.Version != "1.4.3" || req.Unit != "brama.service" || req.Mode != channel.ModeApply {
		t.Errorf("request %+v", req)
	}
	res := rows[0].Result
	if res == nil || !res.OK || res.Error != nil || res.Release == nil || res.Release.Outcome != release.OutcomeActivated || res.Release.From != "1.4.2" || res.Release.PID != 11 {
		t.Fatalf("result %+v", res)
	}
	if w := resultWord(res); w != "ok, activated 1.4.2 → 1.4.3, pid 11" {
		t.Errorf("result word %q", w)
	}
}

func TestARefusedActivationCountsAgainstTheFailureBudget(t *testing.T) {
	doc := releaseFleet("h1", "h2")
	f := &activatingHosts{calls: map[string][]release.ActivateRequest{}, restore: map[string]bool{"h1": true}}
	rows := []Row{
		{Host: "h1", Service: "brama", Product: "brama", Action: ActionConverge},
		{Host: "h2", Service: "brama", Product: "brama", Action: ActionConverge},
	}
	failed, stopped := Enforce(context.Background(), rows, DefaultCaps, func(string) int { return 2 }, f.actor(doc))
	if failed != 1 || !strings.Contains(stopped, "failure budget") {
		t.Fatalf("failed %d, stopped %q", failed, stopped)
	}
	res := rows[0].Result
	if res == nil || res.OK || res.Error == nil || res.Error.Code != string(refusal.ReleaseNotProven) || res.Release.PID != 77 {
		t.Fatalf("h1 result %+v (error %+v)", res, res.Error)
	}
	if !strings.Contains(resultWord(res), "[release_not_proven]") {
		t.Errorf("result word %q", resultWord(res))
	}
	if len(f.calls["h2"]) != 0 || rows[1].Refusal == nil || rows[1].Refusal.Code != CodeNotAttempted {
		t.Errorf("h2 called %d times, row %+v", len(f.calls["h2"]), rows[1])
	}
}

// A report cycle reads the release rows from the beacons it loads: one
// converge row for the host whose active image differs, shown in the
// cycle's table and counted in its summary; an enforcing one hands that
// row to the actor.
func TestACycleCarriesTheConvergeRowsOfItsBeacons(t *testing.T) {
	st := fileStore(t)
	now := time.Now()
	doc, view, connect := benchFleet(2, 1, now)
	doc.Releases = map[string]registry.ReleaseDecl{"brama": {Version: "1.4.3"}}
	for i := range doc.Targets {
		doc.Targets[i].SSH.Address = "127.0.0.1"
		doc.Targets[i].Services[0].Product = "brama"
	}
	doc.Autonomy = registry.Autonomy{Mode: registry.AutonomyEnforce}
	ctx := context.Background()
	if _, err := registry.Push(ctx, st, doc, 0, "release cycle test"); err != nil {
		t.Fatal(err)
	}
	view.Beacons["host0"].Releases = bramaActive("1.4.2")
	view.Beacons["host1"].Releases = bramaActive("1.4.3")
	for name, b := range view.Beacons {
		raw, _ := json.Marshal(b)
		if _, err := st.Put(ctx, store.BeaconPrefix+name, raw, store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	actor := &countingActor{}
	r := &Runner{Store: st, Connect: func() (channel.Connector, func()) { return connect, func() {} }, Actor: actor}
	c, err := r.Run(ctx, Options{Mode: registry.AutonomyReport})
	if err != nil {
		t.Fatal(err)
	}
	if c.Counts[ActionConverge] != 1 || !strings.Contains(c.Summary, "converge 1") {
		t.Fatalf("counts %v, summary %q", c.Counts, c.Summary)
	}
	_, cells := c.Table()
	found := false
	for _, row := range cells {
		if row[0] == "host0" && row[2] == ActionConverge && row[3] == "would activate brama 1.4.3, now 1.4.2" {
			found = true
		}
	}
	if !found || len(actor.hosts) != 0 {
		t.Fatalf("table %v, acted on %v", cells, actor.hosts)
	}
	c, err = r.Run(ctx, Options{Mode: registry.AutonomyEnforce, LeaseTTL: MinLeaseTTL})
	if err != nil {
		t.Fatal(err)
	}
	// host0's svc0 is stopped in the fixture: its start, then its converge.
	if len(actor.hosts) != 2 || actor.hosts[0] != "host0" || actor.hosts[1] != "host0" || c.Failed != 0 {
		t.Fatalf("acted on %v, failed %d", actor.hosts, c.Failed)
	}
}
