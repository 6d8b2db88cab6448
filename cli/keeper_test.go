package cli

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wisent/stado/channel/channeltest"
	"github.com/wisent/stado/tests/testbed"
)

// Whether a command may start a keeper is injected: the Env a test builds
// starts none (a test binary is no stado to run `host keeper`), and only
// Main, a real stado process, sets the start of its own executable's.
func TestOnlyARealProcessStartsAKeeper(t *testing.T) {
	env := NewEnv(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	if env.StartKeeper != nil {
		t.Fatal("NewEnv starts a keeper: a test's commands would start the test binary")
	}
	if startThisKeeper() == nil {
		t.Fatal("a process that can name its executable has no keeper start")
	}
}

// The replay: $XDG_RUNTIME_DIR names a directory another user owns
// (as su without - leaves it) where that user planted a keeper socket. A
// root command must not hand it the call: it dials the host itself (here
// a closed port, so a connect failure) and says once, on stderr, why the
// keeper was not used; the impostor is sent nothing.
func TestACommandNeverRidesAKeeperSocketPlantedByAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		testbed.Unavailable(t, "planting another uid's directory needs root")
	}
	const nobody = 65534
	runtime, err := os.MkdirTemp("", "stado-xdg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(runtime) })
	planted := filepath.Join(runtime, "stado")
	if err := os.Mkdir(planted, 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(planted, "keeper.sock"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	var received atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			n, _ := c.Read(make([]byte, 4096))
			received.Add(int64(n))
			c.Close()
		}
	}()
	for _, p := range []string{runtime, planted, filepath.Join(planted, "keeper.sock")} {
		if err := os.Lchown(p, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("XDG_RUNTIME_DIR", runtime)
	t.Setenv("STADO_NO_KEEPER", "")

	dir := writeStore(t, fixtureDoc)
	code, out, errOut := runRegistryCLI(t, dir, "service", "restart", "api", "--json", "--known-hosts", filepath.Join(t.TempDir(), "known_hosts"),
		"--ssh-config", os.DevNull, "--identity", channeltest.WriteKey(t))
	ln.Close()
	wg.Wait()
	if n := received.Load(); n != 0 {
		t.Fatalf("the planted socket received %d bytes", n)
	}
	if code != ExitFailure || !strings.Contains(out, `"stage": "connect"`) && !strings.Contains(out, `"stage":"connect"`) {
		t.Fatalf("exit %d, want the direct dial's connect failure: %s\n%s", code, out, errOut)
	}
	var warned []string
	for _, l := range strings.Split(errOut, "\n") {
		if strings.Contains(l, "keeper not used") {
			warned = append(warned, l)
		}
	}
	if want := "keeper socket directory " + planted + " belongs to uid 65534, not 0"; len(warned) != 1 || !strings.Contains(warned[0], want) {
		t.Fatalf("stderr says %q about the keeper, want one line with %q:\n%s", warned, want, errOut)
	}
}
