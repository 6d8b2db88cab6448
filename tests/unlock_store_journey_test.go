package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/register"
	"github.com/wisent/stado/safefile"
	"github.com/wisent/stado/store"
	"github.com/wisent/stado/tests/testbed"
)

// The stale-lock journey: a host's stado process (declared as a product
// asking the shipped stado question, GET the release route for the probe
// object, with the shipped object-api repair) answers at once, until a
// process that took the probe object's store lock dies while a child it
// started keeps the lock's open file. From then on every read of that key
// waits on the lock, so the host's question stands; the host runs the
// object-api step (`stado host unlock-store --stale`, which finds the store
// through $HOME/.stado/store-url), which removes the lock whose recorded
// holder is gone, then restarts the process, and the question is answered
// again. The orphan still runs: the lock was cleared, not its holder
// killed.

const unlockSite = `version: 1
products:
  - name: uj-stado
    units: {systemd: uj-stado.service}
    program: /usr/local/bin/stado
    answering: {method: GET, path: "/api/release/object?uri=stado://releases/answering-probe", repair: [object-api]}
`

const unlockFleet = `version: 1
service_resolver: {refresh_seconds: 2}
directory:
  - {service: uj-stado, host: %[1]s, port: 19471}
targets:
  - name: %[1]s
    ssh: {address: %[2]s, port: 22, user: root}
    os: linux
    services:
      - name: uj-stado
        unit: uj-stado.service
        program: /usr/local/bin/stado
        args: [host, run, --listen, "%[2]s:19471"]
        env: {STADO_STORE: "%[3]s", STADO_INTERVAL: 1s, STADO_HOST: %[1]s, HOME: /var/tmp/uj-home}
        product: uj-stado
`

func TestStaleStoreLockIsClearedByTheObjectAPIStepAndTheQuestionIsAnsweredAgain(t *testing.T) {
	t.Parallel()
	bed := testbed.Shared(t, 1)
	bin := testbed.BuildStado(t)
	bed.InstallStado(t, bin)
	h := bed.Host(1)
	ctx := context.Background()

	orphan := filepath.Join(bed.BinDir(), "uj-lock-orphan")
	if out, err := exec.Command("go", "build", "-o", orphan, "./fixtures/lockorphan").CombinedOutput(); err != nil {
		t.Fatalf("build the lock orphan: %v\n%s", err, out)
	}
	bed.InstallBin(t, orphan)
	storeDir := bed.NewStore(t)
	storeURL := "file://" + storeDir
	c := newCLI(t, bed, storeURL)
	site := filepath.Join(t.TempDir(), "site.yaml")
	fleet := filepath.Join(t.TempDir(), "fleet.yaml")
	os.WriteFile(site, []byte(unlockSite), 0o644)
	os.WriteFile(fleet, []byte(fmt.Sprintf(unlockFleet, h.Name, h.Addr, storeURL)), 0o644)
	c.mustRun(t, "catalog", "push", site)
	c.mustRun(t, "registry", "push", fleet, "--reason", "unlock-store journey")
	t.Cleanup(func() {
		if t.Failed() {
			out, _, _ := bed.Exec(ctx, h, "journalctl", "--no-pager", "-n", "80", "-u", "uj-stado.service")
			t.Logf("journal of uj-stado.service:\n%s", out)
		}
		bed.Exec(ctx, h, "systemctl", "stop", "uj-orphan.service")
		bed.Exec(ctx, h, "systemctl", "disable", "--now", "uj-stado.service")
		bed.Exec(ctx, h, "rm", "-f", "/etc/systemd/system/uj-stado.service")
		bed.Exec(ctx, h, "systemctl", "daemon-reload")
		bed.Exec(ctx, h, "systemctl", "reset-failed", "uj-*") // this journey's units only: a parallel journey's restart counts stay
		bed.Exec(ctx, h, "rm", "-rf", "/var/tmp/uj-home", "/var/tmp/uj-orphan.pid")
	})
	// the store the object-api step acts on, as an operator points a
	// host's stado commands at its store
	if out, _, err := bed.Exec(ctx, h, "mkdir", "-p", "/var/tmp/uj-home/.stado"); err != nil {
		t.Fatalf("mkdir: %v\n%s", err, out)
	}
	if err := bed.WriteFile(h, "/var/tmp/uj-home/.stado/store-url", []byte(storeURL+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.mustRun(t, "service", "ensure", "uj-stado", "--host", h.Name, "--reason", "the host process")
	mainPID := func() string {
		out, _, err := bed.Exec(ctx, h, "systemctl", "show", "-p", "MainPID", "--value", "uj-stado.service")
		if err != nil {
			t.Fatalf("MainPID: %v", err)
		}
		return strings.TrimSpace(out)
	}

	st, err := store.OpenFileStore(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	var lastPass int64
	newBlock := func() (*beacon.Beacon, *beacon.Answering) {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		obj, err := st.Get(rctx, store.BeaconPrefix+h.Name)
		if err != nil {
			return nil, nil
		}
		var b beacon.Beacon
		if json.Unmarshal(obj.Value, &b) != nil || (b.Pass == lastPass && !b.At.IsZero()) {
			return nil, nil
		}
		lastPass = b.Pass
		for _, u := range b.Units {
			if u.Service == "uj-stado" {
				return &b, u.Answering
			}
		}
		return &b, nil
	}
	answered := func(a *beacon.Answering) bool {
		return a != nil && a.State == beacon.AnswerFinished && a.Finished != nil && a.Finished.Answered != nil
	}
	eventually(t, 60*time.Second, "the host's question is answered", func() (bool, string) {
		b, a := newBlock()
		if b == nil {
			return false, "no new beacon"
		}
		return answered(a), fmt.Sprintf("pass %d: %+v", b.Pass, a)
	})
	before := mainPID()

	// The stale lock: its holder dies, its child keeps the flock.
	lock := filepath.Join(storeDir, ".lock~"+strings.ReplaceAll(store.ReleasePrefix+"answering-probe", "/", "~"))
	if out, _, err := bed.Exec(ctx, h, "systemd-run", "--unit=uj-orphan", "-p", "RemainAfterExit=yes",
		"/usr/local/bin/uj-lock-orphan", lock, "/var/tmp/uj-orphan.pid"); err != nil {
		t.Fatalf("start the lock orphan: %v\n%s", err, out)
	}
	var sleeper string
	eventually(t, 20*time.Second, "the orphan holds the lock", func() (bool, string) {
		b, err := bed.ReadFile(h, "/var/tmp/uj-orphan.pid")
		if err != nil {
			return false, err.Error()
		}
		sleeper = strings.TrimSpace(string(b))
		rec, err := safefile.ReadHolder(lock)
		return sleeper != "" && rec != nil && err == nil, fmt.Sprintf("record %+v, %v", rec, err)
	})
	if u, err := safefile.TryLock(lock); !errors.Is(err, safefile.ErrLocked) {
		if u != nil {
			u()
		}
		t.Fatalf("the orphan's lock is not held: %v", err)
	}
	holder, _ := safefile.ReadHolder(lock)
	t.Logf("lock %s records %s; the orphan sleeper %s keeps it", lock, holder, sleeper)

	// The question stands, the step clears the lock, the restart runs and
	// the new process answers. The window is wide: the process restarts
	// itself, and its stop may wait out systemd's stop timeout while its own
	// restart job is pending.
	var stood, cleared bool
	eventually(t, 240*time.Second, "the question stood, the lock was cleared and the question answered again", func() (bool, string) {
		if _, err := os.Stat(lock); errors.Is(err, os.ErrNotExist) {
			cleared = true
		}
		b, a := newBlock()
		if b == nil {
			return false, fmt.Sprintf("no new beacon after pass %d (stood %v, cleared %v)", lastPass, stood, cleared)
		}
		if a != nil && a.State == beacon.AnswerStood {
			stood = true
		}
		// Only a standing question runs object-api, so a cleared lock and
		// a new process prove it stood even when no published pass caught
		// the stood state (the process restarts itself within a pass or two)
		return cleared && answered(a) && mainPID() != before,
			fmt.Sprintf("pass %d: %s (stood %v, cleared %v, pid %s was %s)", b.Pass, stateOf(a), stood, cleared, mainPID(), before)
	})
	if !stood {
		t.Logf("no published pass caught the question standing; the cleared lock and the restart show it stood")
	}
	if _, _, err := bed.Exec(ctx, h, "/bin/kill", "-0", sleeper); err != nil {
		t.Errorf("the orphan %s no longer runs: the lock was not cleared by unlock-store: %v", sleeper, err)
	}
	// What the step said, when the host could record it before its own
	// restart ended it.
	if data, err := bed.ReadFile(h, "/var/tmp/uj-home/.stado/service-recoveries.jsonl"); err == nil {
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var row register.Recovery
			if json.Unmarshal([]byte(line), &row) != nil || row.Service != "uj-stado" {
				continue
			}
			if len(row.Steps) != 1 || row.Steps[0].Step != "object-api" || !row.Steps[0].OK {
				t.Errorf("register row: steps %+v, want object-api ok", row.Steps)
			}
			t.Logf("object-api said: %s", row.Steps[0].Output)
		}
	} else {
		t.Logf("no register row (the restart ended the process that would append it): %v", err)
	}
}

func stateOf(a *beacon.Answering) string {
	if a == nil {
		return "no block"
	}
	return string(a.State)
}
