package testbed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wisent/stado/safefile"
)

// Environment knobs of the Go side (testbed.sh has its own, see its header).
const (
	// HostsEnv overrides how many hosts the shared bed starts with (default 3).
	HostsEnv = "STADO_TESTBED_HOSTS"
	// DefaultHosts is the shared bed's size unless a journey asks for more.
	DefaultHosts = 3
	// MaxHosts is the most hosts a journey may ask for: testbed.sh's range.
	MaxHosts = 250
	// LockPath is the machine-wide lock a test process holds while it owns
	// the testbed; a second process waits for it.
	LockPath = "/run/stado-testbed.lock"
)

// upTimeout bounds one `testbed.sh up` (boot and sshd of every host) of
// up to 10 hosts; each host beyond adds upPerHost.
const (
	upTimeout = 3 * time.Minute
	upPerHost = 2 * time.Second
)

// shared is the one bed of this test process.
var shared struct {
	mu     sync.Mutex
	cond   *sync.Cond
	unlock func()             // releases the lock on LockPath, held until Shutdown
	bed    *Bed               // nil while down
	users  int                // tests between Shared and their cleanup
	holds  map[testing.TB]int // users per test
	broken error              // a failed up: later journeys fail fast instead of retrying
	first  bool               // this process has brought a bed up before
}

func init() { shared.cond = sync.NewCond(&shared.mu) }

// Shared returns this test process's testbed with at least n hosts, bringing
// it up on first use with max(n, STADO_TESTBED_HOSTS or 3) hosts.
// It calls Require first, so it skips or fails like Require. Journeys share
// the bed: hosts keep what earlier journeys left (use unique unit names, or
// clean up in t.Cleanup).
//
// When n is more than the bed has, the bed is restarted with n hosts once no
// other test holds it (a test holds it from Shared until its cleanup; call
// t.Parallel before Shared, or a larger request waits for ever). The first
// call takes the machine-wide lock LockPath for the rest of the process, so
// two test processes never share or break one testbed: the second waits.
// Main releases it. Any leftover testbed (a crashed run, `make testbed-up`)
// is torn down before the first up.
func Shared(t testing.TB, n int) *Bed {
	t.Helper()
	Require(t)
	if n > MaxHosts {
		t.Fatalf("testbed: %d hosts asked, at most %d", n, MaxHosts)
	}
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.broken != nil {
		t.Fatalf("testbed: an earlier up failed: %v", shared.broken)
	}
	if shared.unlock == nil {
		if err := takeLock(t); err != nil {
			t.Fatalf("testbed: %v", err)
		}
	}
	if shared.bed != nil && len(shared.bed.hosts) < n {
		if shared.holds[t] > 0 {
			t.Fatalf("testbed: %s already holds a bed of %d hosts and now asks for %d; ask for %d in its first Shared call",
				t.Name(), len(shared.bed.hosts), n, n)
		}
		for shared.users > 0 {
			t.Logf("testbed: waiting for %d test(s) to release the bed before restarting it with %d hosts", shared.users, n)
			shared.cond.Wait()
		}
		if err := shared.bed.down(); err != nil {
			shared.broken = err
			t.Fatalf("testbed: %v", err)
		}
		shared.bed = nil
	}
	if shared.bed == nil {
		start := time.Now()
		n = max(n, defaultHosts(t))
		bed, err := bringUp(n, !shared.first)
		shared.first = true
		if err != nil {
			shared.broken = err
			t.Fatalf("testbed: %v", err)
		}
		t.Logf("testbed: %d hosts up in %.1fs (state %s)", n, time.Since(start).Seconds(), bed.dir)
		shared.bed = bed
	}
	shared.users++
	if shared.holds == nil {
		shared.holds = map[testing.TB]int{}
	}
	shared.holds[t]++
	t.Cleanup(func() {
		shared.mu.Lock()
		shared.users--
		if shared.holds[t]--; shared.holds[t] == 0 {
			delete(shared.holds, t)
		}
		shared.cond.Broadcast()
		shared.mu.Unlock()
	})
	return shared.bed
}

// Down tears the shared bed down now, leaving no process and no cgroup of
// it; the next Shared brings up a fresh one. b must come from Shared in the
// calling test; Down waits until no other test holds the bed. Calling it
// again is harmless.
func (b *Bed) Down(t testing.TB) {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	for shared.users > 1 {
		t.Logf("testbed: waiting for %d other test(s) to release the bed", shared.users-1)
		shared.cond.Wait()
	}
	if err := b.down(); err != nil {
		t.Fatalf("testbed: %v", err)
	}
	if shared.bed == b {
		shared.bed = nil
	}
}

func defaultHosts(t testing.TB) int {
	v := os.Getenv(HostsEnv)
	if v == "" {
		return DefaultHosts
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxHosts {
		t.Fatalf("testbed: %s=%q: want 1..%d", HostsEnv, v, MaxHosts)
	}
	return n
}

// takeLock takes LockPath, waiting (with one log line) while another test
// process holds it. Called with shared.mu held.
func takeLock(t testing.TB) error {
	t.Helper()
	unlock, err := safefile.TryLock(LockPath)
	if errors.Is(err, safefile.ErrLocked) {
		t.Logf("testbed: another test process holds %s; waiting for it", LockPath)
		unlock, err = safefile.Lock(context.Background(), LockPath)
	}
	if err != nil {
		return err
	}
	shared.unlock = unlock
	return nil
}

// Main runs the tests of a package that uses Shared, then tears the shared
// bed down if this process brought it up, removes the stado build and
// releases the lock. Use it as `func TestMain(m *testing.M) {
// os.Exit(testbed.Main(m)) }`. An interrupt (SIGINT, SIGTERM) tears the bed
// down too, then exits 1.
func Main(m *testing.M) int {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sig
		fmt.Fprintf(os.Stderr, "testbed: %v: tearing the testbed down\n", s)
		if err := Shutdown(); err != nil {
			fmt.Fprintf(os.Stderr, "testbed: %v\n", err)
		}
		os.Exit(1)
	}()
	code := m.Run()
	signal.Stop(sig)
	if err := Shutdown(); err != nil {
		fmt.Fprintf(os.Stderr, "testbed: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// Shutdown tears the shared bed down if it is up, removes the stado build
// and releases the lock. Main calls it; it is idempotent.
func Shutdown() error {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	var err error
	if shared.bed != nil {
		err = shared.bed.down()
		shared.bed = nil
	}
	if shared.unlock != nil {
		shared.unlock()
		shared.unlock = nil
	}
	build.mu.Lock()
	if build.dir != "" {
		os.RemoveAll(build.dir)
		build.dir, build.path, build.err = "", "", nil
	}
	build.mu.Unlock()
	return err
}

// scriptPath finds testbed.sh next to this source file.
func scriptPath() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if ok {
		p := filepath.Join(filepath.Dir(file), "testbed.sh")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "tests", "testbed", "testbed.sh"), nil
}

// moduleRoot walks up from the working directory to the go.mod of stado.
func moduleRoot() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok {
		root := filepath.Dir(filepath.Dir(filepath.Dir(file)))
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			return root, nil
		}
	}
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		up := filepath.Dir(d)
		if up == d {
			return "", errors.New("go.mod not found above the working directory")
		}
		d = up
	}
}

// stateDir and storeDir follow testbed.sh's defaults and environment.
func stateDir() string {
	if d := os.Getenv("TESTBED_DIR"); d != "" {
		return filepath.Clean(d)
	}
	return "/tmp/stado-testbed"
}

func storeDir() string {
	if d := os.Getenv("TESTBED_STORE"); d != "" {
		return filepath.Clean(d)
	}
	return "/var/lib/stado-testbed/store"
}

// bringUp tears down any leftover testbed and boots n hosts. With fresh set,
// the hosts' /usr/local/bin starts empty, so no binary of an earlier run is
// taken for the one under test. Called with the lock held.
func bringUp(n int, fresh bool) (*Bed, error) {
	script, err := scriptPath()
	if err != nil {
		return nil, err
	}
	b := &Bed{dir: stateDir(), store: storeDir(), script: script}
	if err := b.down(); err != nil {
		return nil, fmt.Errorf("clearing a leftover testbed: %w", err)
	}
	if fresh {
		if err := os.RemoveAll(b.BinDir()); err != nil {
			return nil, err
		}
	}
	if out, err := b.runScript(upTimeout+time.Duration(max(n-10, 0))*upPerHost, "up", strconv.Itoa(n)); err != nil {
		msg := fmt.Sprintf("testbed.sh up %d: %v\n%s%s", n, err, tail(out, 20), b.consoles(n))
		if derr := b.down(); derr != nil {
			msg += fmt.Sprintf("\n(and down after it: %v)", derr)
		}
		return nil, errors.New(msg)
	}
	for k := 1; k <= n; k++ {
		b.hosts = append(b.hosts, Host{Name: "host" + strconv.Itoa(k), Addr: "127.0.1." + strconv.Itoa(k), Index: k})
	}
	return b, nil
}

// down runs `testbed.sh down`: every host stopped by its recorded pid,
// SIGKILL after a timeout, cgroups removed. Idempotent.
func (b *Bed) down() error {
	if out, err := b.runScript(time.Minute+time.Duration(len(b.hosts))*time.Second, "down"); err != nil {
		return fmt.Errorf("testbed.sh down: %v\n%s", err, tail(out, 20))
	}
	return nil
}

// script_ runs testbed.sh with the lock marked as held by this process.
func (b *Bed) runScript(timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/bash", append([]string{b.script}, args...)...)
	cmd.Env = append(os.Environ(),
		"TESTBED_DIR="+b.dir, "TESTBED_STORE="+b.store,
		"TESTBED_LOCK_HELD=1", "TESTBED_NO_INSTALL=1", "STADO_BIN=")
	cmd.Stdin = nil
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// consoles returns the end of each host's console log, for a failed up.
func (b *Bed) consoles(n int) string {
	var sb strings.Builder
	for k := 1; k <= n; k++ {
		data, err := os.ReadFile(filepath.Join(b.dir, "hosts", "host"+strconv.Itoa(k), "console.log"))
		if err == nil && len(data) > 0 {
			fmt.Fprintf(&sb, "\nhost%d console:\n%s", k, tail(string(data), 5))
		}
	}
	return sb.String()
}

// NewStore returns a fresh, empty directory inside StoreDir for t (so every
// journey's `file://` store is its own, and every host sees it at the same
// path). It is removed when t ends.
func (b *Bed) NewStore(t testing.TB) string {
	t.Helper()
	name := regexp.MustCompile(`[^A-Za-z0-9_.-]+`).ReplaceAllString(t.Name(), "_")
	d, err := os.MkdirTemp(b.store, name+"-")
	if err != nil {
		t.Fatalf("testbed: new store: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// build caches the stado binary of this test process.
var build struct {
	mu   sync.Mutex
	dir  string
	path string
	err  error
}

// BuildStado builds ./cmd/stado once per test process and returns the
// binary's path (in a temp dir that Shutdown removes). A build failure fails
// t, and every later call.
func BuildStado(t testing.TB) string {
	t.Helper()
	build.mu.Lock()
	defer build.mu.Unlock()
	if build.path == "" && build.err == nil {
		build.path, build.err = buildStado()
	}
	if build.err != nil {
		t.Fatalf("testbed: build stado: %v", build.err)
	}
	return build.path
}

func buildStado() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	dir, err := os.MkdirTemp("", "stado-build-")
	if err != nil {
		return "", err
	}
	build.dir = dir
	out := filepath.Join(dir, "stado")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, gobin, "build", "-buildvcs=false", "-o", out, "./cmd/stado")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // as make build does
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%v\n%s", err, tail(string(msg), 20))
	}
	return out, nil
}
