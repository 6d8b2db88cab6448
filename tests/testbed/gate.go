// Package testbed runs stado's journeys against simulated hosts on this
// machine: each host is a set of namespaces with a real systemd as PID 1 and a
// real OpenSSH server on its own loopback address 127.0.1.K, brought up by
// testbed.sh next to this file.
//
// The package owns the bed's lifetime inside one test process: the first
// journey that asks for it (Shared) brings it up under a machine-wide lock,
// and Main tears it down when the tests end. It also builds the stado binary
// under test (BuildStado) and puts it at /usr/local/bin/stado inside every
// host (Bed.InstallStado; each host has its own /usr/local/bin and
// /var/lib/stado), and makes a host bare, sshd only, for a journey that
// bootstraps it (Bed.WithoutStado).
//
// Journeys that cannot run here (not root, no systemd, no sshd, -short) skip
// with one line, or fail when STADO_TESTBED=required, as CI sets it.
//
// It imports nothing of stado: journeys drive stado as a binary, the way a
// user does.
package testbed

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// GateEnv names the environment variable that decides what a test does when
// the testbed cannot run: with the value "required" it fails, otherwise it
// skips.
const GateEnv = "STADO_TESTBED"

// Required reports whether STADO_TESTBED=required is set, so a missing
// prerequisite must fail the test instead of skipping it.
func Required() bool { return os.Getenv(GateEnv) == "required" }

// Unavailable ends t because something a test needs is not there: it calls
// t.Fatalf when STADO_TESTBED=required and t.Skipf otherwise, with one line
// naming why.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	why := fmt.Sprintf(format, args...)
	if Required() {
		t.Fatalf("%s=required but the testbed cannot run: %s", GateEnv, why)
	}
	t.Skipf("testbed unavailable: %s (set %s=required to fail instead)", why, GateEnv)
}

// Require ends t through Unavailable when the testbed's prerequisites are
// missing (root, systemd, sshd, unshare/nsenter and friends, a cgroup2
// hierarchy) or when the tests run with -short. It starts nothing.
func Require(t testing.TB) {
	t.Helper()
	if testing.Short() {
		Unavailable(t, "-short is set")
	}
	if why := Missing(); why != "" {
		Unavailable(t, "%s", why)
	}
}

// Missing returns the first missing prerequisite of the testbed, or "" when
// everything it needs is here.
func Missing() string {
	if os.Geteuid() != 0 {
		return "not running as root"
	}
	for _, f := range []string{systemdBin, "/usr/sbin/sshd", "/bin/bash"} {
		if fi, err := os.Stat(f); err != nil || fi.Mode()&0o111 == 0 {
			return f + " is missing (run scripts/deps.sh)"
		}
	}
	for _, c := range []string{"unshare", "nsenter", "ssh", "ssh-keygen", "setsid", "flock", "timeout", "mountpoint"} {
		if _, err := exec.LookPath(c); err != nil {
			return "command " + c + " is not in PATH"
		}
	}
	if _, err := os.Stat("/etc/machine-id"); err != nil {
		return "/etc/machine-id is missing"
	}
	if cgroup2Base() == "" {
		return "no cgroup2 hierarchy at /sys/fs/cgroup or /sys/fs/cgroup/unified"
	}
	return ""
}

const (
	systemdBin   = "/lib/systemd/systemd"
	cgroupName   = "stado-testbed"
	cgroup2Magic = 0x63677270
)

// cgroup2Base returns the cgroup2 mount the script puts the hosts under, or "".
func cgroup2Base() string {
	for _, p := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		var st syscall.Statfs_t
		if syscall.Statfs(p, &st) == nil && st.Type == cgroup2Magic {
			return p
		}
	}
	return ""
}
