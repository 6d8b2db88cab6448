package safefile_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/safefile"
	"github.com/wisent/stado/tests/testbed"
)

// A lock taken by a writer in another pid namespace (a container or a
// testbed host sharing the store's directory) records a pid that means
// another process here, or none: unlock-store --stale must never judge it
// gone and remove it while its writer runs.
func TestClearStaleKeepsALockHeldFromAnotherPIDNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		testbed.Unavailable(t, "needs root to start a holder in a pid namespace of its own")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		testbed.Unavailable(t, "needs unshare (util-linux): %v", err)
	}
	path := filepath.Join(t.TempDir(), "x.lock")
	// sh is pid 1 of the new namespace and stays; the test binary (its pid
	// 2) takes the lock, hands it to a sleeper and exits, so its recorded
	// pid is gone there and, here, names some other process.
	cmd := exec.Command(unshare, "--pid", "--kill-child", "--mount-proc", "sh", "-c", `"$0" -test.run='^$'; sleep 300`, os.Args[0])
	cmd.Env = append(os.Environ(), "SAFEFILE_ORPHAN_LOCK="+path)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the namespaced holder: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // --kill-child takes the namespace with it
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the namespaced holder printed no sleeper pid: %v", err)
	}
	h, err := safefile.ReadHolder(path)
	if err != nil || h == nil {
		t.Fatalf("ReadHolder = %v, %v", h, err)
	}
	if self := safefile.Self(time.Now()); h.PIDNS == "" || h.PIDNS == self.PIDNS {
		t.Fatalf("holder records pid namespace %q, this process is in %q (sleeper %s)", h.PIDNS, self.PIDNS, strings.TrimSpace(line))
	}
	r, err := safefile.ClearStale(path, 0, time.Now().Add(time.Hour))
	if err != nil || r.Removed || r.State != safefile.LockUnjudged {
		t.Fatalf("ClearStale = %+v, %v; want unjudged and kept", r, err)
	}
	if !strings.Contains(r.Note, "pid namespace") {
		t.Fatalf("note %q does not say why it was not judged", r.Note)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the lock file is gone: %v", err)
	}
}

// A record that names no pid namespace was written by a stado that did not
// record one; on Linux its pid cannot be told from a pid of another
// namespace, so it is not judged either.
func TestARecordWithoutAPIDNamespaceIsNotJudgedOnLinux(t *testing.T) {
	if safefile.Self(time.Now()).PIDNS == "" {
		testbed.Unavailable(t, "this system reports no pid namespace")
	}
	h := safefile.Holder{PID: os.Getpid(), Start: "x", Host: safefile.Self(time.Now()).Host}
	if got := h.Judge(); got != safefile.HolderOtherNamespace {
		t.Fatalf("Judge = %v, want HolderOtherNamespace", got)
	}
}
