package etcdtest

import (
	"context"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wisent/stado/tests/testbed"
)

// etcdctl runs the real etcdctl against endpoints and returns its stdout.
func etcdctl(t *testing.T, endpoints []string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("etcdctl"); err != nil {
		testbed.Unavailable(t, "etcdctl is not installed (Debian package etcd-client)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	argv := append([]string{"--endpoints", strings.Join(endpoints, ","), "--command-timeout", "10s"}, args...)
	out, err := exec.CommandContext(ctx, "etcdctl", argv...).CombinedOutput()
	if err != nil {
		t.Fatalf("etcdctl %q: %v\n%s", argv, err, out)
	}
	return string(out)
}

// gone reports whether pid no longer names a live process.
func gone(pid int) bool {
	return syscall.Kill(pid, 0) == syscall.ESRCH
}

// TestSingleMemberAnswersAndKeepsDataAcrossAKill starts one member, writes
// through etcdctl, kills it with SIGKILL (health then fails), restarts it on
// the same data dir and reads the value back.
func TestSingleMemberAnswersAndKeepsDataAcrossAKill(t *testing.T) {
	c := Start(t, 1)
	ctx := context.Background()
	if err := c.Healthy(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if eps := c.Endpoints(); len(eps) != 1 || !strings.HasPrefix(eps[0], "http://127.0.0.1:") {
		t.Fatalf("endpoints %q, want one loopback URL", eps)
	}
	etcdctl(t, c.Endpoints(), "put", "stado/probe", "kept")
	pid := c.Pid(0)
	c.Kill(0)
	if !gone(pid) {
		t.Fatalf("member pid %d alive after Kill", pid)
	}
	if err := c.Healthy(ctx, 0); err == nil {
		t.Fatal("a killed member still reports healthy")
	}
	c.Restart(0)
	if got := etcdctl(t, c.Endpoints(), "get", "--print-value-only", "stado/probe"); strings.TrimSpace(got) != "kept" {
		t.Errorf("after restart get = %q, want kept", got)
	}
	pid = c.Pid(0)
	c.Stop()
	if !gone(pid) {
		t.Errorf("member pid %d alive after Stop", pid)
	}
	c.Stop() // idempotent
}

// TestThreeMembersKeepAQuorumWhenOneIsKilled starts a 3-member cluster,
// writes through member 1, reads through member 3, kills member 1 and
// writes again through the other two.
func TestThreeMembersKeepAQuorumWhenOneIsKilled(t *testing.T) {
	c := Start(t, 3)
	eps := c.Endpoints()
	if len(eps) != 3 {
		t.Fatalf("endpoints %q, want 3", eps)
	}
	if out := etcdctl(t, eps, "member", "list"); strings.Count(out, "started") != 3 {
		t.Fatalf("member list shows not 3 started members:\n%s", out)
	}
	etcdctl(t, eps[:1], "put", "stado/k", "v1")
	if got := etcdctl(t, eps[2:], "get", "--print-value-only", "stado/k"); strings.TrimSpace(got) != "v1" {
		t.Errorf("read through member 3 = %q, want v1", got)
	}
	c.Kill(0)
	// The survivors elect a new leader first; a put during the election
	// times out, so retry it until a deadline.
	deadline := time.Now().Add(30 * time.Second)
	for {
		argv := []string{"--endpoints", strings.Join(eps[1:], ","), "--command-timeout", "5s", "put", "stado/k", "v2"}
		out, err := exec.Command("etcdctl", argv...).CombinedOutput()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no write accepted by the two survivors within 30s: %v\n%s", err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got := etcdctl(t, eps[1:2], "get", "--print-value-only", "stado/k"); strings.TrimSpace(got) != "v2" {
		t.Errorf("after losing member 1, get = %q, want v2", got)
	}
	pids := []int{c.Pid(1), c.Pid(2)}
	c.Stop()
	for _, p := range pids {
		if !gone(p) {
			t.Errorf("pid %d alive after Stop", p)
		}
	}
}
