package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wisent/stado/alert"
	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/register"
	"github.com/wisent/stado/store"
	"github.com/wisent/stado/tests/testbed"
)

// The answering journey: on one testbed host, `stado host run` asks three
// fixture services their question every second. The one that holds its
// requests is repaired (its step removes the marker), restarted by systemd
// (a new MainPID), alerted to a loopback webhook and recorded; the one that
// answers 503 at once is reported with its body and never restarted.

const answeringSite = `version: 1
products:
  - name: aj-hold
    units: {systemd: aj-hold.service}
    program: /usr/local/bin/aj-answering-fixture
    answering: {method: GET, path: /work, repair: [aj-unmark]}
  - name: aj-sealed
    units: {systemd: aj-sealed.service}
    program: /usr/local/bin/aj-answering-fixture
    answering: {method: GET, path: /readyz}
  - name: aj-ok
    units: {systemd: aj-ok.service}
    program: /usr/local/bin/aj-answering-fixture
    answering: {method: POST, path: /v1/chat/completions, body: {q: ping}}
steps:
  aj-unmark:
    linux: {argv: [/bin/rm, -f, /var/tmp/aj-hold.marker], timeout_seconds: 5}
`

const answeringFleet = `version: 1
service_resolver: {refresh_seconds: 2}
directory:
  - {service: aj-hold, host: %[1]s, port: 19461}
  - {service: aj-sealed, host: %[1]s, port: 19462}
  - {service: aj-ok, host: %[1]s, port: 19463}
targets:
  - name: %[1]s
    ssh: {address: %[2]s, port: 22, user: root}
    os: linux
    alerts:
      - name: journey-hook
        webhook: {url: "%[4]s"}
    services:
      - name: aj-stado
        unit: aj-stado.service
        program: /usr/local/bin/stado
        args: [host, run]
        env: {STADO_STORE: "%[3]s", STADO_INTERVAL: 1s, STADO_HOST: %[1]s, HOME: /var/tmp/aj-home}
      - name: aj-hold
        unit: aj-hold.service
        program: /usr/local/bin/aj-answering-fixture
        args: [--mode, hold, --marker, /var/tmp/aj-hold.marker, --listen, "%[2]s:19461"]
        product: aj-hold
      - name: aj-sealed
        unit: aj-sealed.service
        program: /usr/local/bin/aj-answering-fixture
        args: [--mode, "503", --listen, "%[2]s:19462"]
        product: aj-sealed
      - name: aj-ok
        unit: aj-ok.service
        program: /usr/local/bin/aj-answering-fixture
        args: [--mode, ok, --listen, "%[2]s:19463"]
        product: aj-ok
`

// alertReceiver is the loopback webhook the journey's alerts go to.
type alertReceiver struct {
	url    string
	mu     sync.Mutex
	alerts []alert.Alert
}

func startAlertReceiver(t *testing.T) *alertReceiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &alertReceiver{url: "http://" + ln.Addr().String() + "/alerts"}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var a alert.Alert
		if err := json.NewDecoder(req.Body).Decode(&a); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.alerts = append(r.alerts, a)
		r.mu.Unlock()
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return r
}

func (r *alertReceiver) received() []alert.Alert {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]alert.Alert(nil), r.alerts...)
}

func TestAnsweringJourneyStandingServiceIsRepairedRestartedAndRecorded(t *testing.T) {
	t.Parallel()
	bed := testbed.Shared(t, 1)
	bin := testbed.BuildStado(t)
	bed.InstallStado(t, bin)
	h := bed.Host(1)
	ctx := context.Background()

	fixture := filepath.Join(bed.BinDir(), "aj-answering-fixture")
	if out, err := exec.Command("go", "build", "-o", fixture, "./fixtures/answering").CombinedOutput(); err != nil {
		t.Fatalf("build the fixture: %v\n%s", err, out)
	}
	bed.InstallBin(t, fixture)
	storeDir := bed.NewStore(t)
	storeURL := "file://" + storeDir
	c := newCLI(t, bed, storeURL)
	hook := startAlertReceiver(t)

	site := filepath.Join(t.TempDir(), "site.yaml")
	fleet := filepath.Join(t.TempDir(), "fleet.yaml")
	os.WriteFile(site, []byte(answeringSite), 0o644)
	os.WriteFile(fleet, []byte(fmt.Sprintf(answeringFleet, h.Name, h.Addr, storeURL, hook.url)), 0o644)
	c.mustRun(t, "catalog", "push", site)
	c.mustRun(t, "registry", "push", fleet, "--reason", "answering journey")
	units := []string{"aj-stado.service", "aj-hold.service", "aj-sealed.service", "aj-ok.service"}
	t.Cleanup(func() {
		for _, u := range units {
			removeUnit(bed, h, u) // its failed state reset by name: a parallel journey's restart counts stay
		}
		bed.Exec(ctx, h, "rm", "-rf", "/var/tmp/aj-home", "/var/tmp/aj-hold.marker")
	})
	if err := bed.WriteFile(h, "/var/tmp/aj-hold.marker", []byte("held\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"aj-hold", "aj-sealed", "aj-ok"} {
		c.mustRun(t, "service", "ensure", s, "--host", h.Name, "--reason", "answering fixture")
	}
	mainPID := func(unit string) string {
		out, _, err := bed.Exec(ctx, h, "systemctl", "show", "-p", "MainPID", "--value", unit)
		if err != nil {
			t.Fatalf("MainPID of %s: %v", unit, err)
		}
		return strings.TrimSpace(out)
	}
	holdPID, sealedPID := mainPID("aj-hold.service"), mainPID("aj-sealed.service")
	c.mustRun(t, "service", "ensure", "aj-stado", "--host", h.Name, "--reason", "the host process")

	st, err := store.OpenFileStore(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	readBeacon := func() *beacon.Beacon { return storedBeacon(ctx, st, h.Name) }
	blockOf := func(b *beacon.Beacon, svc string) *beacon.Answering {
		if u := unitOf(b, svc); u != nil {
			return u.Answering
		}
		return nil
	}

	// Watch every beacon until the held service stood, was recovered and
	// then answered; the sealed one must read finished 503 throughout.
	var (
		stoodAt, askedSince time.Time
		sealedFinished      int
		lastPass            int64
		recovered           bool
	)
	eventually(t, 60*time.Second, "the held service stood, recovered and answered", func() (bool, string) {
		b := readBeacon()
		if b == nil || b.Pass == lastPass {
			return false, "no new beacon"
		}
		lastPass = b.Pass
		hold, sealed := blockOf(b, "aj-hold"), blockOf(b, "aj-sealed")
		if hold == nil || sealed == nil {
			return false, fmt.Sprintf("pass %d: no answering blocks: %+v", b.Pass, b.Units)
		}
		if sealed.State == beacon.AnswerFinished {
			if a := sealed.Finished.Answered; a == nil || a.Status != 503 || a.Successful || !strings.Contains(a.Detail, "vault sealed") {
				t.Errorf("pass %d: sealed finished %+v, want 503 with its body", b.Pass, sealed.Finished)
			}
			sealedFinished++
		}
		if hold.State == beacon.AnswerStood && stoodAt.IsZero() {
			stoodAt, askedSince = b.At, *hold.Since
		}
		if len(hold.Recovery) > 0 {
			var rec register.Recovery
			json.Unmarshal(hold.Recovery, &rec)
			recovered = rec.State == register.Attempted
		}
		done := recovered && hold.State == beacon.AnswerFinished && hold.Finished.Answered != nil && hold.Finished.Answered.Successful
		return done && sealedFinished >= 5, fmt.Sprintf("pass %d: hold %s, sealed finished %d times", b.Pass, hold.State, sealedFinished)
	})
	t.Logf("the held question stood %.1fs after it was asked (bound 2s, pass interval 1s)", stoodAt.Sub(askedSince).Seconds())

	if pid := mainPID("aj-hold.service"); pid == holdPID || pid == "0" {
		t.Errorf("aj-hold MainPID %s, was %s: want a new process", pid, holdPID)
	}
	if pid := mainPID("aj-sealed.service"); pid != sealedPID {
		t.Errorf("aj-sealed MainPID changed %s → %s: a service answering 503 was restarted", sealedPID, pid)
	}
	data, err := bed.ReadFile(h, "/var/tmp/aj-home/.stado/service-recoveries.jsonl")
	if err != nil {
		t.Fatalf("read the register: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 1 {
		t.Fatalf("register holds %d rows, want 1:\n%s", len(lines), data)
	}
	var row register.Recovery
	if err := json.Unmarshal([]byte(lines[0]), &row); err != nil {
		t.Fatal(err)
	}
	if row.Service != "aj-hold" || !row.Complete || len(row.Steps) != 1 || !row.Steps[0].OK || row.Restart == nil || !row.Restart.OK ||
		fmt.Sprint(row.Restart.PID) == holdPID || len(row.Alerts) != 1 || !row.Alerts[0].OK {
		t.Errorf("register row %+v", row)
	}
	alerts := hook.received()
	if len(alerts) != 1 || !strings.Contains(alerts[0].Summary, "repair aj-unmark ok") || !strings.Contains(alerts[0].Summary, "restart aj-hold.service done") {
		t.Errorf("alerts %+v, want one naming the repair and the restart", alerts)
	}
	// the host's own recoveries command reads the same row
	out, _, err := bed.SSH(ctx, h, "env", "HOME=/var/tmp/aj-home", "stado", "service", "recoveries", "--service", "aj-hold", "--json")
	if err != nil || !strings.Contains(out, `"service": "aj-hold"`) {
		t.Errorf("service recoveries on the host: %v\n%s", err, out)
	}
}
