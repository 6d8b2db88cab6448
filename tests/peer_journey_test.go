package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/register"
	"github.com/wisent/stado/repair"
	"github.com/wisent/stado/resolver"
	"github.com/wisent/stado/store"
	"github.com/wisent/stado/tests/testbed"
)

// The peer journey: host1's clients reach host2's pj-brama through two
// resolver proxies on host1. pj-brama holds every request while a marker
// exists, and one request (/stuck) is kept open by a stranded child that a
// restart does not end. host2's own stado host process never runs. host1's
// pass reads its waiting list, finds pj-brama standing, and runs the
// declared repair step (it removes the marker) and the restart on host2
// over SSH. New requests are answered; host1's register holds one row
// observed by host1; the next pass, with the stranded request still the
// oldest, reports already_recovered and restarts nothing.

const peerSite = `version: 1
products:
  - name: pj-brama
    units: {systemd: pj-brama.service}
    program: /usr/local/bin/pj-peer-fixture
    answering: {method: POST, path: /v1/chat/completions, body: {q: ping}, repair: [pj-unmark]}
steps:
  pj-unmark:
    linux: {argv: [/bin/rm, -f, /var/tmp/pj-brama.marker], timeout_seconds: 5}
`

const peerFleet = `version: 1
service_resolver: {refresh_seconds: 2}
directory:
  - {service: pj-brama, host: %[3]s, port: 19471}
targets:
  - name: %[1]s
    ssh: {address: %[2]s, port: 22, user: root}
    os: linux
  - name: %[3]s
    ssh: {address: %[4]s, port: 22, user: root}
    os: linux
    services:
      - name: pj-stado
        unit: pj-stado.service
        program: /usr/local/bin/stado
        args: [host, run]
        env: {STADO_STORE: "%[5]s", STADO_HOST: %[3]s, HOME: /var/tmp/pj-home}
      - name: pj-brama
        unit: pj-brama.service
        program: /usr/local/bin/pj-peer-fixture
        args: [--listen, "%[4]s:19471", --marker, /var/tmp/pj-brama.marker]
        product: pj-brama
`

// pj-brama's unit is written by hand: KillMode=process lets the stranded
// child outlive a restart, which the rendered units never ask for.
const peerUnit = `[Unit]
Description=peer journey fixture

[Service]
ExecStart=/usr/local/bin/pj-peer-fixture --listen %s:19471 --marker /var/tmp/pj-brama.marker
KillMode=process
Restart=always
`

const peerHome = "/var/tmp/pj-home"

func TestPeerJourneyHost1RepairsHost2sStandingServiceOverSSH(t *testing.T) {
	t.Parallel()
	bed := testbed.Shared(t, 2)
	bin := testbed.BuildStado(t)
	bed.InstallStado(t, bin)
	h1, h2 := bed.Host(1), bed.Host(2)
	ctx := context.Background()

	fixture := filepath.Join(bed.BinDir(), "pj-peer-fixture")
	if out, err := exec.Command("go", "build", "-o", fixture, "./fixtures/peer").CombinedOutput(); err != nil {
		t.Fatalf("build the fixture: %v\n%s", err, out)
	}
	bed.InstallBin(t, fixture)
	storeDir := bed.NewStore(t)
	storeURL := "file://" + storeDir
	c := newCLI(t, bed, storeURL)
	site := filepath.Join(t.TempDir(), "site.yaml")
	fleet := filepath.Join(t.TempDir(), "fleet.yaml")
	os.WriteFile(site, []byte(peerSite), 0o644)
	os.WriteFile(fleet, []byte(fmt.Sprintf(peerFleet, h1.Name, h1.Addr, h2.Name, h2.Addr, storeURL)), 0o644)
	c.mustRun(t, "catalog", "push", site)
	c.mustRun(t, "registry", "push", fleet, "--reason", "peer journey")

	proxies := []string{"pj-proxy-a.service", "pj-proxy-b.service"}
	t.Cleanup(func() {
		for _, u := range proxies {
			bed.Exec(ctx, h1, "systemctl", "stop", u)
		}
		// the stranded child outlives a plain stop under KillMode=process
		bed.Exec(ctx, h2, "systemctl", "kill", "--kill-whom=all", "--signal=SIGKILL", "pj-brama.service")
		bed.Exec(ctx, h2, "systemctl", "stop", "pj-brama.service")
		bed.Exec(ctx, h2, "rm", "-f", "/etc/systemd/system/pj-brama.service", "/var/tmp/pj-brama.marker")
		bed.Exec(ctx, h2, "systemctl", "daemon-reload")
		bed.Exec(ctx, h2, "systemctl", "reset-failed", "pj-brama.service") // this journey's unit only
		for _, h := range []testbed.Host{h1, h2} {
			bed.Exec(ctx, h, "systemctl", "reset-failed", "pj-*") // this journey's units only: a parallel journey's restart counts stay
			bed.Exec(ctx, h, "rm", "-rf", peerHome)
		}
	})

	// host2 runs no stado process, but its channel program resolves repair
	// steps from its default store (~/.stado/store): point that at the
	// fleet's store, where the site catalog declares pj-unmark.
	pointDefaultStore(t, bed, h2, storeDir)

	// host2: the held service, and no stado host process at all.
	if err := bed.WriteFile(h2, "/var/tmp/pj-brama.marker", []byte("held\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := bed.WriteFile(h2, "/etc/systemd/system/pj-brama.service", []byte(fmt.Sprintf(peerUnit, h2.Addr)), 0o644); err != nil {
		t.Fatal(err)
	}
	peerExec(t, bed, h2, "systemctl", "daemon-reload")
	peerExec(t, bed, h2, "systemctl", "start", "pj-brama.service")
	host2StadoStopped := func() {
		t.Helper()
		out, _, _ := bed.Exec(ctx, h2, "systemctl", "is-active", "pj-stado.service")
		if s := strings.TrimSpace(out); s == "active" || s == "activating" {
			t.Fatalf("host2's own stado process runs (%s)", s)
		}
	}
	host2StadoStopped()
	mainPID := func() string {
		out, _, err := bed.Exec(ctx, h2, "systemctl", "show", "-p", "MainPID", "--value", "pj-brama.service")
		if err != nil {
			t.Fatalf("MainPID: %v", err)
		}
		return strings.TrimSpace(out)
	}
	firstPID := mainPID()

	// host1: an SSH identity to reach host2, and two resolver proxies.
	key, err := os.ReadFile(bed.KeyPath())
	if err != nil {
		t.Fatal(err)
	}
	known, err := os.ReadFile(bed.KnownHosts())
	if err != nil {
		t.Fatal(err)
	}
	peerExec(t, bed, h1, "mkdir", "-p", peerHome+"/.ssh")
	if err := bed.WriteFile(h1, peerHome+"/.ssh/id_ed25519", key, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := bed.WriteFile(h1, peerHome+"/.ssh/known_hosts", known, 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + peerHome, "STADO_STORE=" + storeURL, "STADO_HOST=" + h1.Name, "STADO_NO_KEEPER=1",
		"STADO_KNOWN_HOSTS=" + peerHome + "/.ssh/known_hosts", "STADO_SSH_IDENTITY=" + peerHome + "/.ssh/id_ed25519"}
	for i, u := range proxies {
		argv := []string{"systemd-run", "--unit", u, "--property", "Restart=no"}
		for _, e := range env {
			argv = append(argv, "--setenv="+e)
		}
		argv = append(argv, "/usr/local/bin/stado", "resolver", "proxy", "--service", "pj-brama",
			"--listen", fmt.Sprintf("%s:%d", h1.Addr, 19481+i), "--host", h1.Name, "--client", fmt.Sprintf("pj-client-%c", 'a'+i))
		peerExec(t, bed, h1, argv...)
	}
	proxyA, proxyB := "http://"+h1.Addr+":19481", "http://"+h1.Addr+":19482"
	listPath := resolver.ListPath(peerHome)
	readList := func() []resolver.Publication {
		data, err := bed.ReadFile(h1, listPath)
		if err != nil {
			return nil
		}
		var l resolver.WaitingList
		if json.Unmarshal(data, &l) != nil {
			return nil
		}
		return l.Publishers
	}
	eventually(t, 30*time.Second, "both proxies publish their waiting list", func() (bool, string) {
		pubs := readList()
		return len(pubs) == 2 && pubs[0].RefreshSeconds == 2 && pubs[1].RefreshSeconds == 2, fmt.Sprintf("%+v", pubs)
	})

	// Clients through proxy A: the stranded request first (the oldest),
	// then two held by the marker.
	reqCtx, cancelReqs := context.WithCancel(ctx)
	t.Cleanup(cancelReqs)
	results := make(chan string, 3)
	send := func(method, url, body string) {
		req, _ := http.NewRequestWithContext(reqCtx, method, url, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			results <- "error: " + err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		results <- fmt.Sprintf("%d %s", resp.StatusCode, b)
	}
	go send("GET", proxyA+"/stuck", "")
	answerWaits := func(pubs []resolver.Publication) (ws []resolver.Wait) {
		for _, p := range pubs {
			for _, w := range p.Waits {
				if w.Phase == resolver.PhaseAnswer {
					ws = append(ws, w)
				}
			}
		}
		return ws
	}
	eventually(t, 30*time.Second, "the stranded request waits for an answer", func() (bool, string) {
		ws := answerWaits(readList())
		return len(ws) == 1, fmt.Sprintf("%+v", ws)
	})
	for i := 0; i < 2; i++ {
		go send("POST", proxyA+"/v1/chat/completions", `{"q":"ping"}`)
	}
	var oldest resolver.Wait
	eventually(t, 30*time.Second, "three held requests past the 2 s bound", func() (bool, string) {
		ws := answerWaits(readList())
		if len(ws) != 3 {
			return false, fmt.Sprintf("%d answer waits", len(ws))
		}
		oldest = ws[0]
		for _, w := range ws {
			if w.AcceptedAt.Before(oldest.AcceptedAt) {
				oldest = w
			}
		}
		return time.Since(oldest.AcceptedAt) > 3*time.Second, "younger than the bound"
	})
	if oldest.RequestLine != "GET /stuck HTTP/1.1" || oldest.Client != "pj-client-a" || oldest.Host != h2.Name {
		t.Fatalf("oldest wait %+v", oldest)
	}
	// Proxy A refuses at once, naming the held service but never another
	// client's request (its line, address or query).
	code, body := peerPost(t, proxyA+"/v1/chat/completions")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, resolver.HeldKind) || strings.Contains(body, "/stuck") || strings.Contains(body, "pj-client-a") {
		t.Fatalf("proxy A while held: %d %s", code, body)
	}

	// host1's passes: the peer contributor acts on host2 over SSH. The
	// recovery runs off the pass, so a run of two passes (the second waits
	// for what the first started) publishes its outcome.
	pass := func() *beacon.Beacon {
		t.Helper()
		argv := append([]string{"env"}, env...)
		argv = append(argv, "/usr/local/bin/stado", "host", "run", "--host", h1.Name, "--passes", "2", "--interval", "1s")
		if out, errOut, err := bed.SSH(ctx, h1, argv...); err != nil {
			t.Fatalf("host run on host1: %v\n%s\n%s", err, out, errOut)
		}
		st, err := store.OpenFileStore(storeDir)
		if err != nil {
			t.Fatal(err)
		}
		obj, err := st.Get(ctx, store.BeaconPrefix+h1.Name)
		if err != nil {
			t.Fatalf("host1's beacon: %v", err)
		}
		var b beacon.Beacon
		if err := json.Unmarshal(obj.Value, &b); err != nil {
			t.Fatal(err)
		}
		return &b
	}
	blockOf := func(b *beacon.Beacon) beacon.PeerRecovery {
		t.Helper()
		for _, pr := range b.PeerRecoveries {
			if pr.Service == "pj-brama" && pr.Host == h2.Name {
				return pr
			}
		}
		t.Fatalf("pass %d: no peer recovery of pj-brama on %s: %+v (refusals %+v)", b.Pass, h2.Name, b.PeerRecoveries, b.Refusals)
		return beacon.PeerRecovery{}
	}
	first := blockOf(pass())
	var rec register.Recovery
	if err := json.Unmarshal(first.Recovery, &rec); err != nil {
		t.Fatalf("recovery %s: %v", first.Recovery, err)
	}
	var old repair.PeerOldest
	_ = json.Unmarshal(first.Oldest, &old)
	// three requests were held when the attempt started; by the pass that
	// carries its outcome the restart has answered the marker's two
	if first.AlreadyRecovered || first.Held < 1 || rec.HeldRequests != 3 || first.BoundSeconds != 2 || !first.Since.Equal(oldest.AcceptedAt) ||
		old.RequestLine != "GET /stuck HTTP/1.1" || old.Client != "pj-client-a" {
		t.Errorf("first block %+v oldest %+v", first, old)
	}
	if !rec.Complete || len(rec.Steps) != 1 || rec.Steps[0].Step != "pj-unmark" || !rec.Steps[0].OK || rec.Restart == nil || !rec.Restart.OK || rec.ObservedBy != h1.Name {
		t.Fatalf("recovery %+v, want pj-unmark and the restart done, observed by host1", rec)
	}
	if _, err := bed.ReadFile(h2, "/var/tmp/pj-brama.marker"); err == nil {
		t.Error("the repair step did not remove host2's marker")
	}
	secondPID := mainPID()
	if secondPID == firstPID || secondPID == "0" {
		t.Errorf("pj-brama MainPID %s, was %s: want a restarted process", secondPID, firstPID)
	}
	host2StadoStopped()

	// The marker's requests were answered; the stranded one stands on.
	for i := 0; i < 2; i++ {
		if r := <-results; !strings.HasPrefix(r, "200 ") && !strings.HasPrefix(r, "502 ") {
			t.Errorf("a held request ended with %q", r)
		}
	}
	// New requests through proxy B are answered by the new process.
	code, body = peerPost(t, proxyB+"/v1/chat/completions")
	if code != 200 || !strings.Contains(body, `"pid":`+secondPID) {
		t.Errorf("new request through proxy B: %d %s, want 200 from pid %s", code, body, secondPID)
	}

	regPath := peerHome + "/" + register.HomeFile
	rows := func() []string {
		data, err := bed.ReadFile(h1, regPath)
		if err != nil {
			t.Fatalf("host1's register: %v", err)
		}
		return strings.Split(strings.TrimSpace(string(data)), "\n")
	}
	lines := rows()
	if len(lines) != 1 {
		t.Fatalf("host1's register holds %d rows, want 1", len(lines))
	}
	var row register.Recovery
	if err := json.Unmarshal([]byte(lines[0]), &row); err != nil {
		t.Fatal(err)
	}
	if row.ObservedBy != h1.Name || row.Host != h2.Name || row.Service != "pj-brama" || row.Declaration == nil || row.HeldRequests != 3 {
		t.Errorf("register row %+v", row)
	}

	// The next pass: the same oldest request still stands.
	second := blockOf(pass())
	if !second.AlreadyRecovered || !second.Since.Equal(oldest.AcceptedAt) {
		t.Errorf("second block %+v, want already_recovered for the same oldest request", second)
	}
	if pid := mainPID(); pid != secondPID {
		t.Errorf("pj-brama restarted again: MainPID %s → %s", secondPID, pid)
	}
	if n := len(rows()); n != 1 {
		t.Errorf("host1's register holds %d rows after the second pass, want 1", n)
	}
	host2StadoStopped()
}

// pointDefaultStore makes h's default store (/root/.stado/store) a link to
// storeDir for the test's length. An empty directory there is what any
// other journey's channel call on h leaves (opening the default file store
// creates it), so it is replaced; a store holding anything is not.
func pointDefaultStore(t *testing.T, bed *testbed.Bed, h testbed.Host, storeDir string) {
	t.Helper()
	ctx := context.Background()
	bed.Exec(ctx, h, "rmdir", "/root/.stado/store") // only an empty directory goes
	if _, _, err := bed.Exec(ctx, h, "test", "-e", "/root/.stado/store"); err == nil {
		t.Fatalf("%s already has a default store /root/.stado/store with content; the journey will not replace it", h.Name)
	}
	peerExec(t, bed, h, "mkdir", "-p", "/root/.stado")
	peerExec(t, bed, h, "ln", "-s", storeDir, "/root/.stado/store")
	t.Cleanup(func() {
		if out, _, _ := bed.Exec(ctx, h, "readlink", "/root/.stado/store"); strings.TrimSpace(out) == storeDir {
			bed.Exec(ctx, h, "rm", "-f", "/root/.stado/store")
		}
	})
}

func peerExec(t *testing.T, bed *testbed.Bed, h testbed.Host, argv ...string) {
	t.Helper()
	if out, errOut, err := bed.Exec(context.Background(), h, argv...); err != nil {
		t.Fatalf("%s: %v: %v\n%s\n%s", h.Name, argv, err, out, errOut)
	}
}

func peerPost(t *testing.T, url string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(`{"q":"ping"}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
