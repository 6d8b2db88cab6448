package testbed

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeSysctl writes the stock values of the limits testbed.sh raises into
// a directory shaped like /proc/sys.
func fakeSysctl(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, v := range map[string]string{
		"fs/inotify/max_user_instances": "128",
		"fs/inotify/max_user_watches":   "1048576",
		"kernel/pid_max":                "32768",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func raiseLimits(t *testing.T, sysctl string, hosts string) (stderr string, err error) {
	t.Helper()
	cmd := exec.Command("bash", "testbed.sh", "__raise-limits", hosts)
	cmd.Env = append(os.Environ(), "TESTBED_SYSCTL_DIR="+sysctl)
	var b strings.Builder
	cmd.Stderr = &b
	err = cmd.Run()
	return b.String(), err
}

func readLimit(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func TestUpRaisesOnlyTheKernelLimitsItsHostsNeedAndSaysSo(t *testing.T) {
	dir := fakeSysctl(t)
	stderr, err := raiseLimits(t, dir, "250")
	if err != nil {
		t.Fatalf("%v: %s", err, stderr)
	}
	if got := readLimit(t, dir, "fs/inotify/max_user_instances"); got != "4512" {
		t.Fatalf("max_user_instances %s, want 4512 for 250 hosts", got)
	}
	if !strings.Contains(stderr, "raised fs.inotify.max_user_instances from 128 to 4512 (a boot of 250 hosts)") {
		t.Fatalf("stderr does not say what changed:\n%s", stderr)
	}
	// already high enough: left as it is, nothing said
	if got := readLimit(t, dir, "fs/inotify/max_user_watches"); got != "1048576" {
		t.Fatalf("max_user_watches %s, want it untouched", got)
	}
	if got := readLimit(t, dir, "kernel/pid_max"); got != "32768" {
		t.Fatalf("pid_max %s, want it untouched", got)
	}
	if strings.Contains(stderr, "max_user_watches") || strings.Contains(stderr, "pid_max") {
		t.Fatalf("stderr names a limit it did not change:\n%s", stderr)
	}
	// a second boot of fewer hosts never lowers what is there
	if stderr, err := raiseLimits(t, dir, "3"); err != nil || stderr != "" {
		t.Fatalf("%v: %q, want nothing changed", err, stderr)
	}
	if got := readLimit(t, dir, "fs/inotify/max_user_instances"); got != "4512" {
		t.Fatalf("max_user_instances %s after a smaller boot, want 4512 kept", got)
	}
}

func TestUpFailsNamingALimitItCannotRaise(t *testing.T) {
	dir := fakeSysctl(t)
	// a limit nobody may write, root included: a read-only sysctl of the
	// kernel's (65536), as a read-only /proc/sys would be
	p := filepath.Join(dir, "kernel/pid_max")
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/proc/sys/kernel/ngroups_max", p); err != nil {
		t.Fatal(err)
	}
	stderr, err := raiseLimits(t, dir, "1000")
	if err == nil {
		t.Fatalf("raising an unwritable limit succeeded: %s", stderr)
	}
	if !strings.Contains(stderr, "kernel.pid_max is 65536; a boot of 1000 hosts needs at least 80384") {
		t.Fatalf("the failure does not name the limit and the value needed:\n%s", stderr)
	}
}
