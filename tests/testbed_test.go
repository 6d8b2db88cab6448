package tests

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/tests/testbed"
)

// journeyCtx bounds one test's calls to the bed.
func journeyCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestTestbedHostsAnswerSSHWithTheirOwnName logs into every host with the
// bed's key and strict host-key checking and asks its name.
func TestTestbedHostsAnswerSSHWithTheirOwnName(t *testing.T) {
	bed := testbed.Shared(t, 2)
	ctx := journeyCtx(t)
	for _, h := range bed.Hosts() {
		out, _, err := bed.SSH(ctx, h, "hostname")
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(out); got != h.Name {
			t.Errorf("ssh %s hostname = %q, want %q", h.Name, got, h.Name)
		}
		// nsenter reaches the same host without ssh
		out, _, err = bed.Exec(ctx, h, "hostname")
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(out); got != h.Name {
			t.Errorf("exec %s hostname = %q, want %q", h.Name, got, h.Name)
		}
	}
}

// TestTestbedSSHDeliversEachArgumentIntact sends arguments a remote shell
// would otherwise split, expand or run, and reads them back one per line.
func TestTestbedSSHDeliversEachArgumentIntact(t *testing.T) {
	bed := testbed.Shared(t, 2)
	args := []string{"a b", "it's", "$HOME", "$(hostname)", "*", "-n", "", `back\slash`, "x;y"}
	out, _, err := bed.SSH(journeyCtx(t), bed.Host(2), append([]string{"printf", `[%s]\n`}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for _, a := range args {
		fmt.Fprintf(&want, "[%s]\n", a)
	}
	if out != want.String() {
		t.Errorf("remote printf gave\n%s\nwant\n%s", out, want.String())
	}
}

// TestTestbedSSHRefusesAHostKeyItDoesNotKnow points host2's name at host1's
// key: strict checking must refuse the login.
func TestTestbedSSHRefusesAHostKeyItDoesNotKnow(t *testing.T) {
	bed := testbed.Shared(t, 2)
	known, err := os.ReadFile(bed.KnownHosts())
	if err != nil {
		t.Fatal(err)
	}
	var wrong []string
	for _, line := range strings.Split(strings.TrimSpace(string(known)), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "host1,127.0.1.1" {
			wrong = append(wrong, "host2,127.0.1.2 "+f[1]+" "+f[2])
		}
	}
	if len(wrong) != 1 {
		t.Fatalf("host1's key not found in %s", bed.KnownHosts())
	}
	kh := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(kh, []byte(strings.Join(wrong, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(journeyCtx(t), "ssh", "-F", bed.SSHConfig(), "-o", "UserKnownHostsFile="+kh, "--", "host2", "true")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 255 {
		t.Fatalf("ssh with a wrong host key: err %v, want exit 255; output %s", err, out)
	}
	if !strings.Contains(string(out), "Host key verification failed") {
		t.Errorf("ssh output %q does not name the host key failure", out)
	}
}

// TestTestbedUnitOnOneHostIsInvisibleOnAnother installs and starts a unit on
// host2; host1's systemd must not know it.
func TestTestbedUnitOnOneHostIsInvisibleOnAnother(t *testing.T) {
	bed := testbed.Shared(t, 2)
	ctx := journeyCtx(t)
	h1, h2 := bed.Host(1), bed.Host(2)
	const unit = "tb-probe.service"
	path := "/etc/systemd/system/" + unit
	body := "[Unit]\nDescription=testbed probe\n[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/echo tb-probe-ran\n"
	if err := bed.WriteFile(h2, path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		bed.SSH(ctx, h2, "systemctl", "stop", unit)
		bed.SSH(ctx, h2, "rm", "-f", path)
		bed.SSH(ctx, h2, "systemctl", "daemon-reload")
	})
	for _, argv := range [][]string{{"systemctl", "daemon-reload"}, {"systemctl", "start", unit}} {
		if _, _, err := bed.SSH(ctx, h2, argv...); err != nil {
			t.Fatal(err)
		}
	}
	out, _, err := bed.SSH(ctx, h2, "systemctl", "is-active", unit)
	if got := strings.TrimSpace(out); got != "active" {
		t.Fatalf("host2: %s is %q (%v), want active", unit, got, err)
	}
	out, _, err = bed.SSH(ctx, h1, "systemctl", "show", "-p", "LoadState", "--value", unit)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(out); got != "not-found" {
		t.Errorf("host1: LoadState of %s = %q, want not-found", unit, got)
	}
	if _, err := bed.ReadFile(h1, path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("host1: reading %s: %v, want not exist", path, err)
	}
}

// TestTestbedSharedStoreIsTheSameFilesEverywhere writes into the store from
// the workstation and from a host, and reads each from the other side.
func TestTestbedSharedStoreIsTheSameFilesEverywhere(t *testing.T) {
	bed := testbed.Shared(t, 2)
	ctx := journeyCtx(t)
	store := bed.NewStore(t)
	if err := os.WriteFile(filepath.Join(store, "from-workstation"), []byte("written outside\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, err := bed.Exec(ctx, bed.Host(2), "cat", filepath.Join(store, "from-workstation"))
	if err != nil {
		t.Fatal(err)
	}
	if out != "written outside\n" {
		t.Errorf("host2 reads %q from the store", out)
	}
	if _, _, err := bed.SSH(ctx, bed.Host(1), "cp", "/etc/hostname", filepath.Join(store, "from-host1")); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(store, "from-host1"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(got)) != "host1" {
		t.Errorf("workstation reads %q from host1's write", got)
	}
}

// TestTestbedStadoRunsInsideAHost builds stado, installs it, and runs
// `stado version` over ssh inside a host.
func TestTestbedStadoRunsInsideAHost(t *testing.T) {
	bed := testbed.Shared(t, 2)
	bin := testbed.BuildStado(t)
	bed.InstallStado(t, bin)
	want, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := bed.SSH(journeyCtx(t), bed.Host(2), "/usr/local/bin/stado", "version")
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) || !strings.Contains(out, "stado") {
		t.Errorf("stado version inside host2 = %q, want %q", out, want)
	}
}

// TestTestbedReleaseFilesArePerHost: a file in host1's /var/lib/stado or
// /usr/local/bin is not seen by host2, and WithoutStado leaves host2 with
// no stado for one test, which its cleanup links back.
func TestTestbedReleaseFilesArePerHost(t *testing.T) {
	bed := testbed.Shared(t, 2)
	bin := testbed.BuildStado(t)
	bed.InstallStado(t, bin)
	ctx := journeyCtx(t)
	h1, h2 := bed.Host(1), bed.Host(2)
	for _, path := range []string{"/var/lib/stado/tb-probe", "/usr/local/bin/tb-probe"} {
		if err := bed.WriteFile(h1, path, []byte("host1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { bed.SSH(context.Background(), h1, "rm", "-f", path) })
		if _, _, err := bed.SSH(ctx, h1, "test", "-f", path); err != nil {
			t.Errorf("host1 does not see its own %s: %v", path, err)
		}
		if _, _, err := bed.SSH(ctx, h2, "test", "-e", path); err == nil {
			t.Errorf("host2 sees host1's %s", path)
		}
	}
	t.Run("without stado", func(t *testing.T) {
		bed.WithoutStado(t, h2)
		if _, _, err := bed.SSH(ctx, h2, "test", "-e", "/usr/local/bin/stado"); err == nil {
			t.Errorf("host2 still has /usr/local/bin/stado")
		}
		bed.InstallStado(t, bin) // a bare host is skipped
		if _, _, err := bed.SSH(ctx, h2, "test", "-e", "/usr/local/bin/stado"); err == nil {
			t.Errorf("InstallStado installed stado on bare host2")
		}
		if _, _, err := bed.SSH(ctx, h1, "/usr/local/bin/stado", "version"); err != nil {
			t.Errorf("host1 lost its stado: %v", err)
		}
	})
	if _, _, err := bed.SSH(ctx, h2, "/usr/local/bin/stado", "version"); err != nil {
		t.Errorf("host2 has no stado after WithoutStado's cleanup: %v", err)
	}
}

// TestTestbedSSHDStopsAndStartsOnOneHost stops host2's sshd: logins fail
// there (exit 255) and still work on host1; starting it lets them in again.
func TestTestbedSSHDStopsAndStartsOnOneHost(t *testing.T) {
	bed := testbed.Shared(t, 2)
	ctx := journeyCtx(t)
	h1, h2 := bed.Host(1), bed.Host(2)
	if err := bed.StopSSHD(ctx, h2); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bed.StartSSHD(context.Background(), h2) })
	_, _, err := bed.SSH(ctx, h2, "true")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 255 {
		t.Fatalf("ssh host2 with sshd stopped: %v, want exit 255", err)
	}
	if _, _, err := bed.SSH(ctx, h1, "true"); err != nil {
		t.Fatalf("host1 affected by host2's sshd: %v", err)
	}
	if err := bed.StartSSHD(ctx, h2); err != nil {
		t.Fatal(err)
	}
	if _, _, err := bed.SSH(ctx, h2, "true"); err != nil {
		t.Fatal(err)
	}
}

// TestTestbedRebootKeepsRootAndEmptiesTmp reboots host2: a new PID 1 and
// boot, /root kept, /tmp fresh.
func TestTestbedRebootKeepsRootAndEmptiesTmp(t *testing.T) {
	bed := testbed.Shared(t, 2)
	ctx := journeyCtx(t)
	h := bed.Host(2)
	for _, p := range []string{"/root/tb-reboot-kept", "/tmp/tb-reboot-gone"} {
		if err := bed.WriteFile(h, p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { bed.SSH(context.Background(), h, "rm", "-f", "/root/tb-reboot-kept") })
	bootID := func() string {
		b, err := bed.ReadFile(h, "/proc/sys/kernel/random/boot_id")
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	before := bootID()
	if err := bed.Reboot(ctx, h); err != nil {
		t.Fatal(err)
	}
	if after := bootID(); after == before {
		t.Errorf("boot id %s unchanged by the reboot", after)
	}
	if _, err := bed.ReadFile(h, "/root/tb-reboot-kept"); err != nil {
		t.Errorf("/root lost a file across the reboot: %v", err)
	}
	if _, err := bed.ReadFile(h, "/tmp/tb-reboot-gone"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("/tmp kept a file across the reboot: %v", err)
	}
}

// TestTestbedGrowsWhenAJourneyAsksForMoreHosts asks for one host more than
// the bed has: it comes back with that many, all answering, host1 first.
func TestTestbedGrowsWhenAJourneyAsksForMoreHosts(t *testing.T) {
	var n int
	// in a subtest, so its hold on the bed ends before the bigger request;
	// a bed already at its largest (an earlier journey grew it) is taken
	// down first, so there is room to grow
	t.Run("size now", func(t *testing.T) {
		bed := testbed.Shared(t, 1)
		if len(bed.Hosts()) == testbed.MaxHosts {
			bed.Down(t)
			bed = testbed.Shared(t, 1)
		}
		n = len(bed.Hosts()) + 1
	})
	bed := testbed.Shared(t, n)
	if got := len(bed.Hosts()); got != n {
		t.Fatalf("bed has %d hosts, want %d", got, n)
	}
	last := bed.Host(n)
	if last.Name != fmt.Sprintf("host%d", n) || last.Addr != fmt.Sprintf("127.0.1.%d", n) {
		t.Errorf("last host %+v", last)
	}
	out, _, err := bed.SSH(journeyCtx(t), last, "hostname")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(out) != last.Name {
		t.Errorf("ssh %s hostname = %q", last.Name, out)
	}
}

// TestTestbedDownLeavesNoProcessOrCgroup tears the bed down (it must stay
// the last test of this file: later journeys bring a fresh bed up): no
// recorded process remains, nor the cgroup, nor any listener on :22.
func TestTestbedDownLeavesNoProcessOrCgroup(t *testing.T) {
	bed := testbed.Shared(t, 2)
	procs := bed.Processes()
	// each host has a launcher, its unshare and its PID 1
	if len(procs) != 3*len(bed.Hosts()) {
		t.Fatalf("recorded processes %v, want 3 per host for %d hosts", procs, len(bed.Hosts()))
	}
	if _, err := os.Stat(testbed.CgroupDir()); err != nil {
		t.Fatalf("testbed cgroup while up: %v", err)
	}
	bed.Down(t)
	for _, p := range procs {
		if p.Alive() {
			t.Errorf("%s %s pid %d still alive after down", p.Host, p.Role, p.Pid)
		}
	}
	if _, err := os.Stat(testbed.CgroupDir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("cgroup %s after down: %v", testbed.CgroupDir(), err)
	}
	for _, h := range bed.Hosts() {
		if c, err := net.DialTimeout("tcp", h.Addr+":22", time.Second); err == nil {
			c.Close()
			t.Errorf("%s:22 still accepts connections after down", h.Addr)
		}
	}
	// a second down finds nothing and does nothing
	bed.Down(t)
}
