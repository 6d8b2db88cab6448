package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/safefile"
	"github.com/wisent/stado/store"
	"github.com/wisent/stado/tests/testbed"
)

// TestAWedgedHostProcessIsRestartedBySystemdsWatchdog runs the stado host
// process as the stado product (Type=notify) with a 4 s watchdog and a pass
// every second, ensured over SSH. A healthy process outlives the watchdog
// many times over. Then the test freezes its pass loop from outside —
// it holds the file store's lock on the host's beacon key, as a store that
// holds every read would — and systemd, no longer petted, kills the process
// for a watchdog timeout and starts another (its MainPID moves,
// the journal names the timeout). Released, the new process publishes and
// its beacons resume.
func TestAWedgedHostProcessIsRestartedBySystemdsWatchdog(t *testing.T) {
	t.Parallel()
	w := newWriteBed(t, 1)
	h := w.bed.Host(1)
	const unit, port = "wd-stado.service", 19581
	ctx := journeyCtx(t)
	cleanupUnits(t, w.bed, []testbed.Host{h}, unit)

	doc := &registry.Document{Version: 1, Targets: []registry.Target{{
		Name: h.Name, OS: registry.OSLinux, SSH: registry.SSH{Address: h.Addr, User: "root"},
		Services: []registry.Service{{
			Name: "stado", Unit: unit, Product: "stado", Program: "/usr/local/bin/stado",
			Args:         []string{"host", "run", "--listen", fmt.Sprintf("%s:%d", h.Addr, port)},
			Env:          map[string]string{"STADO_STORE": "file://" + w.store, "STADO_INTERVAL": "1s", "STADO_HOST": h.Name},
			UnitSettings: registry.UnitSettings{WatchdogSec: "4s"},
		}},
	}}}
	st := w.openStore(t)
	defer st.Close()
	if _, err := registry.Push(context.Background(), st, doc, 0, "watchdog journey"); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := w.run(t, "service", "ensure", "stado", "--host", h.Name, "--reason", "the host process under a watchdog"); code != 0 {
		t.Fatalf("ensure: exit %d\n%s\n%s", code, out, errOut)
	}
	file, err := w.bed.ReadFile(h, "/etc/systemd/system/"+unit)
	if err != nil || !strings.Contains(string(file), "\nType=notify\n") || !strings.Contains(string(file), "\nWatchdogSec=4s\n") {
		t.Fatalf("the ensured unit (%v) lacks the product's Type=notify or the declaration's WatchdogSec=4s:\n%s", err, file)
	}
	props := func() map[string]string {
		t.Helper()
		p, err := showProperties(ctx, w.bed, h, unit, "Type,WatchdogUSec,ActiveState,MainPID,NRestarts,StatusText")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := props()
	if first["Type"] != "notify" || first["WatchdogUSec"] != "4s" || first["ActiveState"] != "active" || first["NRestarts"] != "0" {
		t.Fatalf("after ensure systemd reads %v: want an active notify service with a 4s watchdog, never restarted", first)
	}

	// Healthy: pass after pass for longer than the watchdog, never killed.
	pid, _ := strconv.Atoi(first["MainPID"])
	b := waitBeacon(t, st, h.Name, 45*time.Second, func(b beacon.Beacon) bool { return b.Identity.PID == pid && b.Pass >= 8 })
	healthy := props()
	if healthy["NRestarts"] != "0" || healthy["MainPID"] != first["MainPID"] || !strings.HasPrefix(healthy["StatusText"], "pass ") {
		t.Fatalf("a healthy process, at pass %d (more than 4s in): systemd reads %v; want the same pid, no restart, STATUS= naming a pass", b.Pass, healthy)
	}
	t.Logf("healthy: pid %d at pass %d, status %q", pid, b.Pass, healthy["StatusText"])

	// Freeze the pass loop: hold the beacon key's lock from this process
	// (the store directory is the hosts' too).
	fs, ok := st.(*store.FileStore)
	if !ok {
		t.Fatalf("store %T is not the file store", st)
	}
	release := freezeBeacon(t, fs, h.Name)
	frozen := time.Now()

	var restarted map[string]string
	eventually(t, 60*time.Second, "systemd restarts the frozen process", func() (bool, string) {
		restarted = props()
		// A new main process (not the 0 between stop and start) is the
		// restart; the journal below says the watchdog caused it.
		// NRestarts is not asked: any reset-failed on the host zeroes it.
		return restarted["MainPID"] != "0" && restarted["MainPID"] != first["MainPID"], fmt.Sprintf("%v", restarted)
	})
	t.Logf("frozen at %s; restarted %s later: %v", frozen.Format(time.TimeOnly), time.Since(frozen).Round(100*time.Millisecond), restarted)
	journal, _, err := w.bed.Exec(ctx, h, "journalctl", "-u", unit, "--no-pager", "-o", "cat")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(journal, "Watchdog timeout") {
		t.Errorf("the journal of %s does not name the watchdog timeout:\n%s", unit, lastLines(journal, 40))
	}
	for _, l := range strings.Split(journal, "\n") {
		if strings.Contains(l, "Watchdog timeout") || strings.Contains(l, "watchdog") {
			t.Logf("journal: %s", l)
		}
	}

	// Released: the new process ends its first pass, says READY=1, and
	// publishes pass after pass.
	// On a loaded machine the restarted process may itself be restarted
	// again before the release reaches it, so the publisher is any pid
	// after the frozen one, and it must be the one systemd runs now.
	release()
	b = waitBeacon(t, st, h.Name, 60*time.Second, func(b beacon.Beacon) bool { return b.Identity.PID != pid && b.Pass >= 3 })
	newPID := b.Identity.PID
	after := props()
	if after["ActiveState"] != "active" || after["MainPID"] != strconv.Itoa(newPID) || !strings.HasPrefix(after["StatusText"], "pass ") {
		t.Errorf("after the release systemd reads %v; want the restarted pid %d, which publishes, active with its pass in STATUS=", after, newPID)
	}
	t.Logf("resumed: pid %d (systemd first restarted to %s) publishes pass %d, status %q", newPID, restarted["MainPID"], b.Pass, after["StatusText"])
}

// waitBeacon polls the store for host's beacon until ok holds.
func waitBeacon(t *testing.T, st store.Store, host string, within time.Duration, ok func(beacon.Beacon) bool) beacon.Beacon {
	t.Helper()
	var b beacon.Beacon
	eventually(t, within, "beacon of "+host, func() (bool, string) {
		obj, err := st.Get(context.Background(), store.BeaconPrefix+host)
		if err != nil {
			return false, err.Error()
		}
		b = beacon.Beacon{}
		if err := json.Unmarshal(obj.Value, &b); err != nil {
			return false, err.Error()
		}
		return ok(b), fmt.Sprintf("pass %d from pid %d", b.Pass, b.Identity.PID)
	})
	return b
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// freezeBeacon holds the file store's lock on host's beacon key from this
// process, so that host's pass loop blocks on its next publish. The returned
// func releases it (once; calling it again does nothing); t's cleanup
// releases it too, before the cleanups registered earlier (they run last
// first), such as a unit's removal.
func freezeBeacon(t *testing.T, fs *store.FileStore, host string) func() {
	t.Helper()
	locks, err := fs.Locks()
	if err != nil {
		t.Fatal(err)
	}
	lockPath := ""
	for _, l := range locks {
		if l.Key == store.BeaconPrefix+host {
			lockPath = l.Path
		}
	}
	if lockPath == "" {
		t.Fatalf("no lock file of %s%s among %+v", store.BeaconPrefix, host, locks)
	}
	unlock, err := safefile.Lock(context.Background(), lockPath)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release := func() { once.Do(unlock) }
	t.Cleanup(release)
	return release
}
