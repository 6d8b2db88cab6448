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
	"github.com/wisent/stado/resolver"
	"github.com/wisent/stado/store"
	"github.com/wisent/stado/tests/testbed"
)

// The non-blocking peer journey: host1 runs its stado host process (one
// pass a second) and a resolver proxy to host3's pn-brama, which holds
// every request while its marker exists. host1's pass finds pn-brama
// standing and recovers it on host3 over SSH; the first declared repair
// step takes 60 s. All the while host1 keeps publishing: its beacon's pass
// number grows, the recovery is carried as running, and the read half
// (`stado service list --host host1`) reads host1's own row as active, never
// unknown. Once the steps and the restart end, a later pass carries the
// complete recovery and new requests are answered.

const peerSlowSite = `version: 1
products:
  - name: pn-brama
    units: {systemd: pn-brama.service}
    program: /usr/local/bin/pn-peer-fixture
    answering: {method: POST, path: /v1/chat/completions, body: {q: ping}, repair: [pn-slow, pn-unmark]}
steps:
  pn-slow:
    linux: {argv: [/bin/sleep, "60"], timeout_seconds: 120}
  pn-unmark:
    linux: {argv: [/bin/rm, -f, /var/tmp/pn-brama.marker], timeout_seconds: 5}
`

const peerSlowFleet = `version: 1
service_resolver: {refresh_seconds: 2}
directory:
  - {service: pn-brama, host: %[3]s, port: 19491}
targets:
  - name: %[1]s
    ssh: {address: %[2]s, port: 22, user: root}
    os: linux
    services:
      - name: pn-stado
        unit: pn-stado.service
        program: /usr/local/bin/stado
        args: [host, run]
  - name: %[3]s
    ssh: {address: %[4]s, port: 22, user: root}
    os: linux
    services:
      - name: pn-brama
        unit: pn-brama.service
        program: /usr/local/bin/pn-peer-fixture
        args: [--listen, "%[4]s:19491", --marker, /var/tmp/pn-brama.marker]
        product: pn-brama
`

const peerSlowHome = "/var/tmp/pn-home"

func TestPeerRecoveryWithASixtySecondStepLeavesTheObserversRowsFresh(t *testing.T) {
	t.Parallel()
	bed := testbed.Shared(t, 3)
	bin := testbed.BuildStado(t)
	bed.InstallStado(t, bin)
	h1, h3 := bed.Host(1), bed.Host(3)
	ctx := context.Background()

	fixture := filepath.Join(bed.BinDir(), "pn-peer-fixture")
	if out, err := exec.Command("go", "build", "-o", fixture, "./fixtures/peer").CombinedOutput(); err != nil {
		t.Fatalf("build the fixture: %v\n%s", err, out)
	}
	bed.InstallBin(t, fixture)
	storeDir := bed.NewStore(t)
	storeURL := "file://" + storeDir
	c := newCLI(t, bed, storeURL)
	site := filepath.Join(t.TempDir(), "site.yaml")
	fleet := filepath.Join(t.TempDir(), "fleet.yaml")
	os.WriteFile(site, []byte(peerSlowSite), 0o644)
	os.WriteFile(fleet, []byte(fmt.Sprintf(peerSlowFleet, h1.Name, h1.Addr, h3.Name, h3.Addr)), 0o644)
	c.mustRun(t, "catalog", "push", site)
	c.mustRun(t, "registry", "push", fleet, "--reason", "non-blocking peer journey")

	t.Cleanup(func() {
		if t.Failed() {
			out, _, _ := bed.Exec(ctx, h1, "journalctl", "--no-pager", "-n", "60", "-u", "pn-stado.service")
			t.Logf("journal of host1's pn-stado:\n%s", out)
		}
		bed.Exec(ctx, h1, "systemctl", "stop", "pn-stado.service", "pn-proxy.service")
		bed.Exec(ctx, h3, "systemctl", "stop", "pn-brama.service")
		bed.Exec(ctx, h3, "rm", "-f", "/etc/systemd/system/pn-brama.service", "/var/tmp/pn-brama.marker")
		bed.Exec(ctx, h3, "systemctl", "daemon-reload")
		for _, h := range []testbed.Host{h1, h3} {
			bed.Exec(ctx, h, "systemctl", "reset-failed", "pn-*") // this journey's units only: a parallel journey's restart counts stay
			bed.Exec(ctx, h, "rm", "-rf", peerSlowHome)
		}
	})

	// host3's channel program resolves repair steps from its default store.
	pointDefaultStore(t, bed, h3, storeDir)

	// host3: the held service.
	if err := bed.WriteFile(h3, "/var/tmp/pn-brama.marker", []byte("held\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.mustRun(t, "service", "ensure", "pn-brama", "--host", h3.Name, "--reason", "held fixture")

	// host1: an SSH identity to reach host3, its stado host process and a
	// resolver proxy.
	key, err := os.ReadFile(bed.KeyPath())
	if err != nil {
		t.Fatal(err)
	}
	known, err := os.ReadFile(bed.KnownHosts())
	if err != nil {
		t.Fatal(err)
	}
	peerExec(t, bed, h1, "mkdir", "-p", peerSlowHome+"/.ssh")
	if err := bed.WriteFile(h1, peerSlowHome+"/.ssh/id_ed25519", key, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := bed.WriteFile(h1, peerSlowHome+"/.ssh/known_hosts", known, 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + peerSlowHome, "STADO_STORE=" + storeURL, "STADO_HOST=" + h1.Name, "STADO_NO_KEEPER=1",
		"STADO_KNOWN_HOSTS=" + peerSlowHome + "/.ssh/known_hosts", "STADO_SSH_IDENTITY=" + peerSlowHome + "/.ssh/id_ed25519"}
	run := func(unit string, argv ...string) {
		full := []string{"systemd-run", "--unit", unit, "--property", "Restart=no"}
		for _, e := range env {
			full = append(full, "--setenv="+e)
		}
		peerExec(t, bed, h1, append(full, argv...)...)
	}
	run("pn-stado.service", "/usr/local/bin/stado", "host", "run", "--interval", "1s", "--stale-after", "10s")
	run("pn-proxy.service", "/usr/local/bin/stado", "resolver", "proxy", "--service", "pn-brama",
		"--listen", h1.Addr+":19492", "--host", h1.Name, "--client", "pn-client")

	st, err := store.OpenFileStore(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	host1Beacon := func() *beacon.Beacon { return storedBeacon(ctx, st, h1.Name) }
	peerBlock := func(b *beacon.Beacon) (*beacon.PeerRecovery, *register.Recovery) {
		for i, pr := range b.PeerRecoveries {
			if pr.Service == "pn-brama" && pr.Host == h3.Name {
				var rec register.Recovery
				if len(pr.Recovery) > 0 && json.Unmarshal(pr.Recovery, &rec) == nil {
					return &b.PeerRecoveries[i], &rec
				}
				return &b.PeerRecoveries[i], nil
			}
		}
		return nil, nil
	}
	ownRow := func() string {
		code, out, errOut := c.run(t, "service", "list", "--host", h1.Name, "--json")
		if code != 0 {
			return fmt.Sprintf("exit %d: %s", code, errOut)
		}
		var doc struct {
			Services []beacon.Row `json:"services"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			return err.Error()
		}
		for _, r := range doc.Services {
			if r.Service == "pn-stado" {
				return r.State
			}
		}
		return "no row"
	}
	eventually(t, 60*time.Second, "host1's own row reads active", func() (bool, string) {
		s := ownRow()
		return s == beacon.StateActive, s
	})

	listPath := resolver.ListPath(peerSlowHome)
	answerWaits := func() (n int, seen string) {
		data, err := bed.ReadFile(h1, listPath)
		if err != nil {
			return 0, err.Error()
		}
		var l resolver.WaitingList
		if err := json.Unmarshal(data, &l); err != nil {
			return 0, err.Error()
		}
		for _, p := range l.Publishers {
			for _, w := range p.Waits {
				if w.Phase == resolver.PhaseAnswer {
					n++
				}
			}
		}
		return n, string(data)
	}
	eventually(t, 30*time.Second, "the proxy publishes its waiting list", func() (bool, string) {
		_, seen := answerWaits()
		return strings.Contains(seen, `"publishers"`), seen
	})

	// A client's request through host1's proxy is held by host3.
	reqCtx, cancelReq := context.WithCancel(ctx)
	t.Cleanup(cancelReq)
	held := make(chan string, 1)
	go func() {
		req, _ := http.NewRequestWithContext(reqCtx, "POST", "http://"+h1.Addr+":19492/v1/chat/completions", strings.NewReader(`{"q":"ping"}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			held <- "error: " + err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		held <- fmt.Sprintf("%d %s", resp.StatusCode, b)
	}()

	eventually(t, 30*time.Second, "the request waits for host3's answer", func() (bool, string) {
		select {
		case r := <-held:
			t.Fatalf("the request ended before any recovery: %s", r)
		default:
		}
		n, seen := answerWaits()
		return n == 1, seen
	})

	// The recovery starts and runs its 60 s step; meanwhile host1's passes
	// go on and its own row stays active.
	var firstRunning int64
	eventually(t, 60*time.Second, "host1's pass starts the recovery of pn-brama", func() (bool, string) {
		b := host1Beacon()
		if b == nil {
			return false, "no beacon"
		}
		blk, rec := peerBlock(b)
		if rec != nil && rec.State == register.Running {
			firstRunning = b.Pass
			return true, ""
		}
		n, seen := answerWaits()
		return false, fmt.Sprintf("pass %d: block %+v; %d answer waits in %s", b.Pass, blk, n, seen)
	})
	var runningPasses, freshReads int
	var lastPass int64
	var outcome *register.Recovery
	eventually(t, 150*time.Second, "the recovery ends while host1's rows stay fresh", func() (bool, string) {
		b := host1Beacon()
		if b == nil || b.Pass == lastPass {
			return false, "no new beacon"
		}
		lastPass = b.Pass
		_, rec := peerBlock(b)
		if rec == nil {
			return false, fmt.Sprintf("pass %d: no recovery", b.Pass)
		}
		if rec.State == register.Running {
			runningPasses++
			if s := ownRow(); s != beacon.StateActive {
				t.Errorf("pass %d, recovery running: host1's own row reads %s, want active", b.Pass, s)
			} else {
				freshReads++
			}
			return false, fmt.Sprintf("pass %d: running (%d passes so far)", b.Pass, runningPasses)
		}
		outcome = rec
		return true, ""
	})
	t.Logf("while the 60 s step ran, host1 published %d passes carrying it as running (from pass %d) and its own row read active %d times",
		runningPasses, firstRunning, freshReads)
	if runningPasses < 10 || freshReads < 5 {
		t.Errorf("only %d running passes and %d fresh reads during a 60 s step: the pass was held", runningPasses, freshReads)
	}
	if !outcome.Complete || len(outcome.Steps) != 2 || !outcome.Steps[0].OK || !outcome.Steps[1].OK || outcome.Restart == nil || !outcome.Restart.OK || outcome.ObservedBy != h1.Name {
		t.Fatalf("outcome %+v, want both steps and the restart done, observed by host1", outcome)
	}
	select {
	case r := <-held:
		if !strings.HasPrefix(r, "200 ") && !strings.HasPrefix(r, "502 ") {
			t.Errorf("the held request ended with %q", r)
		}
	case <-time.After(30 * time.Second):
		t.Error("the held request did not end after the recovery")
	}
}
