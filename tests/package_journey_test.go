package tests

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

	work := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
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

	const dir = "/var/lib/stado/package-journey"
	root, deb := dir+"/root", dir+"/stado.deb"
	t.Cleanup(func() { bed.SSH(context.Background(), h, "rm", "-rf", dir) })
	run := func(argv ...string) string {
		t.Helper()
		out, errOut, err := bed.SSH(ctx, h, argv...)
		if err != nil {
			t.Fatalf("%s on %s: %v\n%s%s", strings.Join(argv, " "), h.Name, err, out, errOut)
		}
		return out
	}
	run("mkdir", "-p", root+"/var/lib/dpkg/info", root+"/var/lib/dpkg/updates")
	run("touch", root+"/var/lib/dpkg/status")
	if err := bed.WriteFile(h, deb, data, 0o644); err != nil {
		t.Fatal(err)
	}

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
