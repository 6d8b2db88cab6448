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
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/release"
	"github.com/wisent/stado/store"
	"github.com/wisent/stado/tests/testbed"
)

// TestThePackageInstallsOnAHostAndReportsItsBuild builds the Debian package
// with `make package` (a version and commit of the journey's own), and
// installs it on host1 with dpkg — into a root of its own under the host's
// /var/lib/stado (`dpkg --root`), because the testbed's hosts share the
// machine's /usr and dpkg database: a plain `dpkg -i` would install
// /usr/bin/stado on the machine itself. dpkg reads the package, unpacks
// it, records it and removes it as it would on a real host. The packaged
// binary reports the build's version and commit; its bash completion,
// sourced on the host, completes through the packaged binary; its man page
// and unit are where Debian and systemd look for them.
func TestThePackageInstallsOnAHostAndReportsItsBuild(t *testing.T) {
	bed := testbed.Shared(t, 2)
	h := bed.Host(1)
	const version, commit = "9.8.7", "journey0c0ffee"

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	data := buildPackage(ctx, t, version, commit)

	const dir = "/var/lib/stado/package-journey"
	root, deb := dir+"/root", dir+"/stado.deb"
	run := hostRunner(ctx, t, bed, h)
	t.Cleanup(func() { bed.SSH(context.Background(), h, "rm", "-rf", dir) })
	prepareDpkgRoot(t, bed, h, run, root, deb, data)

	info := run("dpkg-deb", "--info", deb)
	for _, want := range []string{"Package: stado", "Version: " + version + "+git" + commit, "Architecture: "} {
		if !strings.Contains(info, want) {
			t.Errorf("dpkg-deb --info lacks %q:\n%s", want, info)
		}
	}
	run("dpkg", "--root="+root, "-i", deb)
	if st := run("dpkg-query", "--admindir="+root+"/var/lib/dpkg", "-W", "-f", "${Status} ${Version}", "stado"); st != "install ok installed "+version+"+git"+commit {
		t.Errorf("dpkg records %q", st)
	}

	var v struct{ Kind, Version, Commit string }
	if err := json.Unmarshal([]byte(run(root+"/usr/bin/stado", "version", "--json")), &v); err != nil {
		t.Fatal(err)
	}
	if v.Version != version || v.Commit != commit {
		t.Errorf("the packaged stado reports %+v, want version %s commit %s", v, version, commit)
	}
	if text := run(root+"/usr/bin/stado", "--version"); !strings.Contains(text, version) || !strings.Contains(text, commit) {
		t.Errorf("stado --version: %q", text)
	}

	unit := run("cat", root+"/usr/lib/systemd/system/stado.service")
	for _, want := range []string{"ExecStart=/usr/bin/stado host run", "Type=notify", "WatchdogSec=", "STADO_STORE="} {
		if !strings.Contains(unit, want) {
			t.Errorf("packaged unit lacks %q:\n%s", want, unit)
		}
	}
	if out := run("zcat", root+"/usr/share/man/man1/stado-service.1.gz"); !strings.Contains(out, ".SS stado service ensure") {
		t.Errorf("stado-service(1) has no section for service ensure")
	}

	// The packaged bash completion, sourced on the host, asks the packaged
	// binary: "stado serv<TAB>" and "stado service ensure --dr<TAB>".
	script := `PATH=` + root + `/usr/bin:$PATH; source ` + root + `/usr/share/bash-completion/completions/stado
COMP_WORDS=(stado serv); COMP_CWORD=1; _stado_complete; echo "${COMPREPLY[*]}"
COMP_WORDS=(stado service ensure --dr); COMP_CWORD=3; _stado_complete; echo "${COMPREPLY[*]}"`
	if got := run("bash", "-c", script); got != "service\n--dry-run\n" {
		t.Errorf("bash completion through the package gave %q", got)
	}

	run("dpkg", "--root="+root, "-r", "stado")
	if _, _, err := bed.SSH(ctx, h, "test", "-e", root+"/usr/bin/stado"); err == nil {
		t.Errorf("dpkg -r left %s/usr/bin/stado", root)
	}
}

// buildPackage runs `make package` with version and commit into a
// directory of the test's own and returns the one .deb it made.
func buildPackage(ctx context.Context, t *testing.T, version, commit string) []byte {
	t.Helper()
	work := t.TempDir()
	start := time.Now()
	mk := exec.CommandContext(ctx, "make", "-C", "..", "package", "VERSION="+version, "COMMIT="+commit,
		"BIN="+filepath.Join(work, "stado"), "STAGE="+filepath.Join(work, "stage"), "DIST="+filepath.Join(work, "dist"))
	out, err := mk.CombinedOutput()
	if err != nil {
		t.Fatalf("make package: %v\n%s", err, out)
	}
	debs, _ := filepath.Glob(filepath.Join(work, "dist", "*.deb"))
	if len(debs) != 1 {
		t.Fatalf("make package left %q in dist\n%s", debs, out)
	}
	t.Logf("make package: %s in %v", filepath.Base(debs[0]), time.Since(start).Round(time.Second))
	data, err := os.ReadFile(debs[0])
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// hostRunner runs argv on h over SSH and fails the test if it fails.
func hostRunner(ctx context.Context, t *testing.T, bed *testbed.Bed, h testbed.Host) func(argv ...string) string {
	return func(argv ...string) string {
		t.Helper()
		out, errOut, err := bed.SSH(ctx, h, argv...)
		if err != nil {
			t.Fatalf("%s on %s: %v\n%s%s", strings.Join(argv, " "), h.Name, err, out, errOut)
		}
		return out
	}
}

// prepareDpkgRoot makes an empty dpkg database under root on h and
// places the package at deb.
func prepareDpkgRoot(t *testing.T, bed *testbed.Bed, h testbed.Host, run func(...string) string, root, deb string, data []byte) {
	t.Helper()
	run("mkdir", "-p", root+"/var/lib/dpkg/info", root+"/var/lib/dpkg/updates")
	run("touch", root+"/var/lib/dpkg/status")
	if err := bed.WriteFile(h, deb, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestThePackagedUnitRunsTheHostProcessUnderSystemdsWatchdog installs the
// package on host1 into a dpkg root of its own under the host's
// /var/lib/stado (as the journey above, for the same reason) and runs the
// unit the package ships: `systemctl link` names the packaged file where
// dpkg put it, and a drop-in in the host's own /etc/systemd/system points
// ExecStart at the packaged binary inside the dpkg root and sets the
// store, the host's name, a pass a second, a 4 s watchdog and a release
// directory under the same root. Nothing is written to the machine's /usr
// or /etc. systemd reads it Type=notify and holds the start until the first
// pass says READY=1 (the pass is in STATUS=); /metrics on its listen address
// serves every family docs/metrics.md lists; the beacon reaches the store.
// Then the test holds the beacon key's file-store lock, the pass loop
// freezes, and the watchdog restarts the process (NRestarts grows).
func TestThePackagedUnitRunsTheHostProcessUnderSystemdsWatchdog(t *testing.T) {
	bed := testbed.Shared(t, 2)
	h := bed.Host(1)
	const version, commit, port = "9.8.6", "journey1c0ffee", 19583
	const unit, dir = "stado.service", "/var/lib/stado/package-unit-journey"
	const dropinDir = "/etc/systemd/system/" + unit + ".d"
	root, deb, releaseDir := dir+"/root", dir+"/stado.deb", dir+"/release"
	ctx, cancel := context.WithTimeout(t.Context(), 6*time.Minute)
	defer cancel()
	run := hostRunner(ctx, t, bed, h)

	if p, err := showProperties(ctx, bed, h, unit, "LoadState"); err != nil || p["LoadState"] != "not-found" {
		t.Fatalf("%s already has %s (%v, %v): this journey links the packaged one", h.Name, unit, p, err)
	}
	data := buildPackage(ctx, t, version, commit)
	t.Cleanup(func() { bed.SSH(context.Background(), h, "rm", "-rf", dir) })
	prepareDpkgRoot(t, bed, h, run, root, deb, data)
	run("dpkg", "--root="+root, "-i", deb)

	storeDir := bed.NewStore(t)
	if err := release.WriteHostState(filepath.Join(bed.HostStadoDir(h), strings.TrimPrefix(releaseDir, "/var/lib/stado/")),
		release.HostState{Products: map[string]release.ProductState{
			"web": {Active: &release.Image{Product: "web", Version: "1.2.0", SHA256: "ab"}},
		}}); err != nil {
		t.Fatal(err)
	}
	listen := fmt.Sprintf("%s:%d", h.Addr, port)
	dropin := fmt.Sprintf(`[Service]
ExecStart=
ExecStart=%s/usr/bin/stado host run --listen %s
Environment=STADO_STORE=file://%s STADO_HOST=%s STADO_INTERVAL=1s STADO_RELEASE_DIR=%s
WatchdogSec=4s
`, root, listen, storeDir, h.Name, releaseDir)
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		bed.Exec(c, h, "systemctl", "stop", unit)
		bed.Exec(c, h, "systemctl", "disable", unit) // removes the link
		bed.Exec(c, h, "rm", "-rf", dropinDir, "/etc/systemd/system/"+unit)
		bed.Exec(c, h, "systemctl", "daemon-reload")
		bed.Exec(c, h, "systemctl", "reset-failed", unit)
	})
	run("systemctl", "link", root+"/usr/lib/systemd/system/"+unit)
	run("mkdir", "-p", dropinDir)
	if err := bed.WriteFile(h, dropinDir+"/journey.conf", []byte(dropin), 0o644); err != nil {
		t.Fatal(err)
	}
	run("systemctl", "daemon-reload")
	start := time.Now()
	run("systemctl", "start", unit) // returns once the unit is active: after READY=1
	t.Logf("systemctl start %s returned after %v", unit, time.Since(start).Round(10*time.Millisecond))

	props := func() map[string]string {
		t.Helper()
		p, err := showProperties(ctx, bed, h, unit, "Type,WatchdogUSec,ActiveState,ActiveEnterTimestamp,MainPID,NRestarts,StatusText,FragmentPath,DropInPaths,ExecStart")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := props()
	t.Logf("after start: %v", first)
	if first["Type"] != "notify" || first["WatchdogUSec"] != "4s" || first["ActiveState"] != "active" || first["NRestarts"] != "0" {
		t.Fatalf("systemd reads %v: want an active notify service with the drop-in's 4s watchdog, never restarted", first)
	}
	if first["ActiveEnterTimestamp"] == "" || !strings.HasPrefix(first["StatusText"], "pass ") {
		t.Errorf("active without a READY pass: ActiveEnterTimestamp %q, StatusText %q", first["ActiveEnterTimestamp"], first["StatusText"])
	}
	if !strings.HasPrefix(first["FragmentPath"], root+"/usr/lib/systemd/system/") && first["FragmentPath"] != "/etc/systemd/system/"+unit {
		t.Errorf("the unit is loaded from %q, not the packaged file", first["FragmentPath"])
	}
	if !strings.Contains(first["ExecStart"], root+"/usr/bin/stado") {
		t.Errorf("ExecStart is %q, not the packaged binary", first["ExecStart"])
	}

	// /metrics on the listen address: every documented family.
	text := getMetrics(t, "http://"+listen+"/metrics")
	for _, name := range documentedFamilies(t) {
		if !strings.Contains(text, "# TYPE "+name+" ") {
			t.Errorf("/metrics of the packaged unit lacks %s", name)
		}
	}
	// Its unit sets no GOGC, so the host process keeps its small heap
	// collected at its own target (beacon.SetHostGCTarget).
	if !strings.Contains(text, "\ngo_gc_gogc_percent 25\n") {
		t.Errorf("the packaged host process does not run at GC target 25 (no line go_gc_gogc_percent 25 on /metrics)")
	}

	// The beacon reaches the store, from the unit's process.
	st, err := store.OpenFileStore(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	pid, _ := strconv.Atoi(first["MainPID"])
	b := waitBeacon(t, st, h.Name, 30*time.Second, func(b beacon.Beacon) bool { return b.Identity.PID == pid && b.Pass >= 2 })
	t.Logf("beacon: pass %d from pid %d", b.Pass, pid)

	// Freeze the pass loop: hold the beacon key's lock.
	unfreeze := freezeBeacon(t, st, h.Name)
	frozen := time.Now()
	var restarted map[string]string
	eventually(t, 60*time.Second, "systemd restarts the frozen packaged process", func() (bool, string) {
		restarted = props()
		// Between the stop and the new start systemd shows MainPID 0. The
		// new process stays activating until the beacon thaws (it is
		// ready after its first published pass).
		return restarted["NRestarts"] != "0" && restarted["MainPID"] != "0" &&
			restarted["MainPID"] != first["MainPID"], fmt.Sprintf("%v", restarted)
	})
	t.Logf("frozen at %s; restarted %s later: NRestarts %s, pid %s", frozen.Format(time.TimeOnly),
		time.Since(frozen).Round(100*time.Millisecond), restarted["NRestarts"], restarted["MainPID"])
	unfreeze()
	newPID, _ := strconv.Atoi(restarted["MainPID"])
	waitBeacon(t, st, h.Name, 60*time.Second, func(b beacon.Beacon) bool { return b.Identity.PID == newPID && b.Pass >= 2 })
}

// getMetrics reads url's body, failing the test on an error or a status
// other than 200.
func getMetrics(t *testing.T, url string) string {
	t.Helper()
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(body)
}

// documentedFamilies reads the family names docs/metrics.md lists in its
// table, as package metrics' own test does.
func documentedFamilies(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range regexp.MustCompile("(?m)^\\| `(stado_[a-z_]+)` \\|").FindAllStringSubmatch(string(doc), -1) {
		names = append(names, m[1])
	}
	if len(names) < 10 {
		t.Fatalf("docs/metrics.md lists %d families: %v", len(names), names)
	}
	return names
}
