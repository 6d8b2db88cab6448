package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/fleet"
	"github.com/wisent/stado/register"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

// readFleet stores a registry declaring skarbiec on h1 and a fresh beacon
// of h1 whose answering question stood and was recovered, and which saw
// brama on h2 standing and failed to restart it. It returns the store dir
// and the clock the beacon is fresh at.
func readFleet(t *testing.T) (string, time.Time) {
	t.Helper()
	dir := repairFleet(t, 10)
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	exit0 := 0
	rec, _ := json.Marshal(register.Recovery{Kind: register.Kind, State: register.Attempted, When: now, Service: "skarbiec", Host: "h1", Complete: true,
		Steps:   []register.StepResult{{Step: "crypto", OK: true, ExitCode: &exit0}},
		Restart: &register.Restart{Unit: "skarbiec.service", OK: true, Answer: "done", PID: 813},
		Alerts:  []register.AlertOutcome{{Channel: "ops", Type: "webhook", Answer: "HTTP 500", Cause: "server error"}}})
	peer, _ := json.Marshal(register.Recovery{Kind: register.Kind, State: register.Attempted, When: now, Service: "brama", Host: "h2",
		Restart: &register.Restart{Unit: "brama.service", Code: "failure", Refusal: "connect refused"}})
	b := beacon.Beacon{Kind: beacon.Kind, Version: beacon.FormatVersion, Host: "h1", Pass: 4, At: now, IntervalSeconds: 15, StaleAfterSeconds: 45,
		Units: []beacon.UnitReport{{Service: "skarbiec", Unit: "skarbiec.service", State: beacon.StateActive, PID: 812,
			Answering: &beacon.Answering{State: beacon.AnswerStood, WaitedSeconds: 31, BoundSeconds: 10, Recovery: rec,
				Question: &beacon.Question{Method: "GET", Path: "/readyz", Endpoint: "127.0.1.1:8200", Repair: []string{"crypto"}}}}},
		PeerRecoveries: []beacon.PeerRecovery{{Service: "brama", Host: "h2", Held: 2, WaitedSeconds: 40, BoundSeconds: 10, Recovery: peer}},
	}
	data, _ := json.Marshal(b)
	st, err := store.OpenFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Put(context.Background(), store.BeaconPrefix+"h1", data, store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	return dir, now.Add(2 * time.Second)
}

func runReadCLI(t *testing.T, dir string, now time.Time, args ...string) (int, string, string) {
	t.Helper()
	env, out, errb := repairTestEnv(t, dir)
	env.Now = func() time.Time { return now }
	code := Run(context.Background(), env, append([]string{"stado", "--store", "file://" + dir}, args...))
	return code, out.String(), errb.String()
}

func TestServiceStatusShowsTheRecoveryAsLinesNeverAsJSON(t *testing.T) {
	dir, now := readFleet(t)
	code, out, errOut := runReadCLI(t, dir, now, "service", "status", "skarbiec")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"skarbiec on h1 (skarbiec.service): active",
		"answering stood 31s (bound 10s)",
		"recovery complete",
		"repair crypto: ok (exit 0)",
		"restart skarbiec.service: done, pid 813",
		"alert ops (webhook): failed: HTTP 500 server error",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	if strings.ContainsAny(out, "{}") {
		t.Errorf("status text holds JSON:\n%s", out)
	}
	// --json is one document that carries the recovery itself
	code, out, _ = runReadCLI(t, dir, now, "service", "status", "skarbiec", "--json")
	var doc beacon.StatusResult
	if decodeDoc(t, out, "stado.service.status", &doc); code != 0 || len(doc.Hosts) != 1 || len(doc.Hosts[0].Answering.Recovery) == 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
}

func TestHostHealthPrintsTextOnlyWithoutJSON(t *testing.T) {
	dir, now := readFleet(t)
	code, out, errOut := runReadCLI(t, dir, now, "host", "health", "--host", "h1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"HOST", "h1    fresh", "active=1", "h1 saw brama on h2 standing", "restart brama.service: refused (failure): connect refused"} {
		if !strings.Contains(out, want) {
			t.Errorf("health lacks %q:\n%s", want, out)
		}
	}
	if strings.ContainsAny(out, "{}") {
		t.Errorf("health text holds JSON:\n%s", out)
	}
	code, out, _ = runReadCLI(t, dir, now, "host", "health", "--host", "h1", "--json")
	var doc beacon.HealthResult
	if decodeDoc(t, out, "stado.host.health", &doc); code != 0 || len(doc.Hosts) != 1 || doc.Hosts[0].Host != "h1" {
		t.Fatalf("exit %d: %s", code, out)
	}
	if code, _, errOut := runReadCLI(t, dir, now, "host", "health", "--host", "h9"); code != ExitRefused || !strings.Contains(errOut, "h9") {
		t.Errorf("unknown host: exit %d %s", code, errOut)
	}
}

func TestServiceListAndDoctorReadTheSameBeacons(t *testing.T) {
	dir, now := readFleet(t)
	code, out, _ := runReadCLI(t, dir, now, "service", "list")
	if code != 0 || !strings.Contains(out, "skarbiec.service  active  812") {
		t.Errorf("list: exit %d\n%s", code, out)
	}
	// the stood question needs attention: findings, then exit 3
	code, out, _ = runReadCLI(t, dir, now, "registry", "doctor", "--json")
	var doc beacon.DoctorResult
	if decodeDoc(t, out, "stado.registry.doctor", &doc); code != ExitRefused || doc.OK || doc.Findings[0].Code != "answering_stood" {
		t.Errorf("doctor: exit %d %+v", code, doc)
	}
	// a beacon past its bound makes every row unknown
	code, out, _ = runReadCLI(t, dir, now.Add(time.Hour), "service", "list")
	if code != 0 || !strings.Contains(out, "unknown") || strings.Contains(out, "active") {
		t.Errorf("stale list: exit %d\n%s", code, out)
	}
}

// logsHost answers unit-logs with one line and keeps the request.
type logsHost struct {
	channel.Host
	got channel.LogsRequest
}

func (h *logsHost) UnitLogs(_ context.Context, req channel.LogsRequest) (channel.LogsResult, error) {
	h.got = req
	return channel.LogsResult{Unit: req.Unit, Lines: []string{"skarbiec ready"}}, nil
}

// --lines reads the declaration's log through the command's host channel
// (fleet over the connector the ssh flags describe), not a pool of its own.
func TestServiceStatusLinesReadTheLogThroughTheCommandsConnector(t *testing.T) {
	dir, now := readFleet(t)
	env, out, _ := repairTestEnv(t, dir)
	env.Now = func() time.Time { return now }
	env.StoreURL = "file://" + dir
	h := &logsHost{}
	connect := func(registry.Target) channel.Host { return h }
	logs := func(ctx context.Context, t registry.Target, s registry.Service, n int) ([]string, error) {
		return fleet.ServiceLogs(ctx, connect, t, s, n)
	}
	if err := runServiceStatus(context.Background(), env, beacon.StatusQuery{Name: "skarbiec", Host: "h1", Lines: 5, Logs: logs}); err != nil {
		t.Fatal(err)
	}
	if h.got.Unit != "skarbiec.service" || h.got.Scope != registry.ScopeSystem || h.got.Lines != 5 {
		t.Errorf("logs request %+v", h.got)
	}
	if !strings.Contains(out.String(), "skarbiec ready") {
		t.Errorf("status lacks the log line:\n%s", out)
	}
}
