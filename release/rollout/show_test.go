package rollout

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/release"
)

func beaconOf(host string, at time.Time, rel *beacon.Releases) *beacon.Beacon {
	return &beacon.Beacon{Kind: beacon.Kind, Version: beacon.FormatVersion, Host: host, At: at, IntervalSeconds: 15, StaleAfterSeconds: 45, Releases: rel}
}

func readBlock(products ...beacon.ProductRelease) *beacon.Releases {
	return &beacon.Releases{State: beacon.ReleasesRead, Products: products}
}

func brama(active, backup string) beacon.ProductRelease {
	pr := beacon.ProductRelease{Product: "brama", Active: &beacon.ReleaseImage{Version: active, SHA256: "sha-" + active}}
	if backup != "" {
		pr.Backup = &beacon.ReleaseImage{Version: backup, SHA256: "sha-" + backup}
	}
	return pr
}

// The fleet-wide show reads beacons only: each host's declared version
// (its own declaration wins) beside what its beacon carries, and a host
// whose images are not known reads unknown with the reason, never an image
// from an older report.
func TestShowFleetJudgesEachHostFromItsBeacon(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	doc := fleetOf(6)
	v := &beacon.View{Document: doc, Now: now, Unreadable: map[string]string{"h5": "not json"}, Beacons: map[string]*beacon.Beacon{
		"h1": beaconOf("h1", now.Add(-5*time.Second), readBlock(brama("2.0", "1.0"))),
		"h2": beaconOf("h2", now.Add(-5*time.Second), readBlock(brama("2.0", "1.0"))),
		"h3": beaconOf("h3", now.Add(-time.Hour), readBlock(brama("2.0", "1.0"))),
		"h4": beaconOf("h4", now, &beacon.Releases{State: beacon.ReleasesUnreadable, Cause: "release state /r/state.json: permission denied"}),
		"h6": beaconOf("h6", now, nil),
	}}
	decl := declare(map[string]string{"brama": "2.0"}, map[string]string{"h2/brama": "1.0"})
	rows := ShowFleet(v, decl, "")
	want := []struct{ host, status, unknown string }{
		{"h1", StatusConverged, ""},
		{"h2", StatusDiffers, ""},
		{"h3", StatusUnknown, "old"},
		{"h4", StatusUnknown, "permission denied"},
		{"h5", StatusUnknown, "unreadable"},
		{"h6", StatusUnknown, "no release images"},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows: %+v", len(rows), rows)
	}
	for i, w := range want {
		r := rows[i]
		if r.Host != w.host || r.Status != w.status || !strings.Contains(r.Unknown, w.unknown) || r.Beacon == nil {
			t.Errorf("row %d: %+v, want %s %s %q", i, r, w.host, w.status, w.unknown)
		}
		if r.Status == StatusUnknown && r.Active != nil {
			t.Errorf("%s: unknown but shows active %+v", r.Host, r.Active)
		}
	}
	if r := rows[0]; !r.Converged || r.Active.SHA256 != "sha-2.0" || r.Backup.Version != "1.0" || r.Declared != "2.0" {
		t.Errorf("h1 %+v", r)
	}
	if r := rows[1]; r.Declared != "1.0" || !r.Pinned || r.Converged {
		t.Errorf("h2 %+v", r)
	}
	if got := ShowFleet(v, decl, "stado"); len(got) != 0 {
		t.Errorf("product filter kept %+v", got)
	}
}

// An installed product nothing declares is shown as undeclared; a declared
// one with no image as not installed.
func TestShowFleetShowsUndeclaredAndMissingImages(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	v := &beacon.View{Document: fleetOf(1), Now: now, Beacons: map[string]*beacon.Beacon{
		"h1": beaconOf("h1", now, readBlock(beacon.ProductRelease{Product: "extra", Active: &beacon.ReleaseImage{Version: "3"}})),
	}}
	rows := ShowFleet(v, declare(map[string]string{"brama": "2.0"}, nil), "")
	if len(rows) != 2 || rows[0].Product != "brama" || rows[0].Status != StatusNotInstalled || rows[1].Product != "extra" || rows[1].Status != StatusUndeclared {
		t.Fatalf("%+v", rows)
	}
}

type stateHost struct {
	fakeHost
	res release.StateResult
	got release.StateRequest
}

func (h *stateHost) ReleaseState(_ context.Context, req release.StateRequest) (release.StateResult, error) {
	h.got = req
	return h.res, nil
}

// The per-host show is one ReleaseState call naming the units of the
// target's product services, and says whether the running pid runs the
// active image.
func TestShowHostSaysWhetherTheRunningPidRunsTheActiveImage(t *testing.T) {
	doc := fleetOf(1)
	h := &stateHost{res: release.StateResult{
		State: release.HostState{Kind: release.KindState, Products: map[string]release.ProductState{
			"brama": {Active: &release.Image{Version: "2.0", SHA256: "sha-2.0"}, Backup: &release.Image{Version: "1.0", SHA256: "sha-1.0"},
				Last: &release.Activation{Version: "2.0", Outcome: release.OutcomeActivated, PIDAfter: 11}}}},
		Running: map[string]release.RunningImage{"brama": {Unit: "brama.service", PID: 11, Exe: "/r/images/sha-2.0/brama", OnActive: true}},
	}}
	rows, err := ShowHost(context.Background(), h, &doc.Targets[0], declare(map[string]string{"brama": "2.0"}, nil), "")
	if err != nil {
		t.Fatal(err)
	}
	if u := h.got.Units["brama"]; u.Unit != "brama.service" || u.Scope != "system" {
		t.Errorf("request %+v", h.got)
	}
	if len(rows) != 1 {
		t.Fatalf("%+v", rows)
	}
	r := rows[0]
	if !r.Converged || r.OnActive == nil || !*r.OnActive || r.PID != 11 || r.Backup.Version != "1.0" || r.Last.PID != 11 || r.Beacon != nil {
		t.Errorf("row %+v", r)
	}
}

// A target the registry does not declare is refused with not_found before
// any host is reached; a declared one is read over the Host connect gives.
func TestShowTargetRefusesAnUndeclaredTargetBeforeConnecting(t *testing.T) {
	doc := fleetOf(1)
	h := &stateHost{}
	connected := 0
	connect := func(registry.Target) channel.Host { connected++; return h }
	if _, err := ShowTarget(context.Background(), connect, doc, "nosuch", ""); !refusal.Is(err, refusal.NotFound) || connected != 0 {
		t.Fatalf("%v after %d connection(s), want not_found before any", err, connected)
	}
	if _, err := ShowTarget(context.Background(), connect, doc, doc.Targets[0].Name, ""); err != nil || connected != 1 {
		t.Fatalf("%v after %d connection(s), want one read", err, connected)
	}
}
