package keeper

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/wisent/stado/channel/sshclient"
	"github.com/wisent/stado/tests/testbed"
)

// impostor is a listener planted on a keeper socket path: it accepts
// every connection and counts what it is sent (the first read of each:
// a request's first bytes, or nothing when the client closes unwritten).
type impostor struct {
	ln       *net.UnixListener
	accepted atomic.Int32
	received atomic.Int64
	wg       sync.WaitGroup
}

// plant listens on sock as this process (the socket file is left as bind
// made it; a case narrows or loosens it); Cleanup stops it.
func plant(t *testing.T, sock string) *impostor {
	t.Helper()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	im := &impostor{ln: ln}
	im.wg.Add(1)
	go func() {
		defer im.wg.Done()
		for {
			c, err := ln.AcceptUnix()
			if err != nil {
				return
			}
			im.accepted.Add(1)
			im.wg.Add(1)
			go func() {
				defer im.wg.Done()
				defer c.Close()
				// one read: the first bytes of a request, or the end of a
				// connection closed with nothing sent
				_ = c.SetReadDeadline(time.Now().Add(keeperDeadline))
				n, _ := c.Read(make([]byte, 4096))
				im.received.Add(int64(n))
			}()
		}
	}()
	t.Cleanup(im.stop)
	return im
}

// stop closes the listener and waits for every connection to end.
func (im *impostor) stop() {
	im.ln.Close()
	im.wg.Wait()
}

// chown makes p another uid's (nobody's); it needs root.
func chown(t *testing.T, p string) {
	t.Helper()
	if err := os.Lchown(p, nobody, nobody); err != nil {
		t.Fatal(err)
	}
}

// chmod sets p's mode exactly (the umask does not apply).
func chmod(t *testing.T, p string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

// logLines is a Client logger's output.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logLines) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Split(strings.TrimSuffix(l.buf.String(), "\n"), "\n")
}

func (l *logLines) empty() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Len() == 0
}

// directlyOnce runs two calls through a pool riding kc and checks that
// both reached the host over the pool's own connection, that kc's own
// error wraps ErrUntrusted (and ErrNotCarried, so pools fall back) with
// reason, and that the reason was logged exactly once.
func directlyOnce(t *testing.T, f *fixture, kc *Client, log *logLines, reason string) {
	t.Helper()
	target := f.srv.Target("web1")
	pool := sshclient.NewPool(f.dialer())
	defer pool.Close()
	pool.Transport = kc
	for i := range 2 {
		if out, _, err := pool.Run(context.Background(), target, []string{"version"}, nil); err != nil || string(out) != "version" {
			t.Fatalf("call %d: %q %v; want it dialed directly", i+1, out, err)
		}
	}
	if n := f.srv.Accepted.Load(); n != 1 {
		t.Fatalf("%d connections reached the host, want the pool's one", n)
	}
	_, _, err := kc.Run(context.Background(), target, f.dialer(), []string{"version"}, nil)
	if !errors.Is(err, ErrUntrusted) || !errors.Is(err, ErrUnavailable) || !errors.Is(err, sshclient.ErrNotCarried) {
		t.Errorf("keeper client error %v, want ErrUntrusted, ErrUnavailable and sshclient.ErrNotCarried", err)
	} else if !strings.Contains(err.Error(), reason) {
		t.Errorf("error %q does not say %q", err, reason)
	}
	lines := log.lines()
	if len(lines) != 1 || !strings.Contains(lines[0], "keeper not used") || !strings.Contains(lines[0], reason) {
		t.Errorf("log %q, want one line saying %q", lines, reason)
	}
}

// TestAnUntrustedKeeperSocketIsSentNothing plants a listener where the
// keeper's socket would be, with the socket or a directory above it
// another uid's or open to others: the client sends it nothing, starts no
// keeper, dials directly and says why once.
func TestAnUntrustedKeeperSocketIsSentNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		root bool // the case needs root (chown)
		// spoil makes the layout untrusted: base is a private directory,
		// dir the socket's directory inside it, sock the planted socket
		spoil  func(t *testing.T, base, dir, sock string)
		reason string
	}{
		// the socket's directory is another uid's, as another user's
		// $XDG_RUNTIME_DIR/stado would be
		{"directory of another uid", true, func(t *testing.T, _, dir, _ string) { chown(t, dir) },
			"belongs to uid 65534, not 0"},
		// the directory's parent is another uid's, as $XDG_RUNTIME_DIR
		// left by su without - is: it could swap the directory
		{"parent of another uid", true, func(t *testing.T, base, _, _ string) { chown(t, base) },
			"parent " + "%BASE%" + " belongs to uid 65534"},
		// anyone in the group may replace the socket
		{"group-writable directory", false, func(t *testing.T, _, dir, _ string) { chmod(t, dir, 0o770) },
			"is writable by its group or others (mode 0770)"},
		// anyone may
		{"world-writable directory", false, func(t *testing.T, _, dir, _ string) { chmod(t, dir, 0o777) },
			"is writable by its group or others (mode 0777)"},
		// a sticky bit does not make a shared directory the user's
		{"sticky world-writable directory", false, func(t *testing.T, _, dir, _ string) { chmod(t, dir, 0o1777) },
			"is writable by its group or others (mode 0777)"},
		// a parent others may write without a sticky bit
		{"world-writable parent", false, func(t *testing.T, base, _, _ string) { chmod(t, base, 0o777) },
			"is writable by its group or others and not sticky"},
		// the directory is a link to one the user owns
		{"directory is a link", false, func(t *testing.T, base, dir, _ string) {
			real := filepath.Join(base, "real")
			if err := os.Rename(dir, real); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(real, dir); err != nil {
				t.Fatal(err)
			}
		}, "is a symbolic link"},
		// the socket itself is another uid's
		{"socket of another uid", true, func(t *testing.T, _, _, sock string) { chown(t, sock) },
			"keeper socket " + "%SOCK%" + " belongs to uid 65534, not 0"},
		// the socket is open to others
		{"world-writable socket", false, func(t *testing.T, _, _, sock string) { chmod(t, sock, 0o666) },
			"is writable by its group or others (mode 0666)"},
		// the socket's name is a link to a socket elsewhere
		{"socket is a link", false, func(t *testing.T, base, _, sock string) {
			real := filepath.Join(base, "real.sock")
			if err := os.Rename(sock, real); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(real, sock); err != nil {
				t.Fatal(err)
			}
		}, "is not a socket"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.root && os.Geteuid() != 0 {
				testbed.Unavailable(t, "changing a file's owner needs root")
			}
			f := newFixture(t)
			sock := keeperSocketPath(t)
			dir := filepath.Dir(sock)
			base := filepath.Dir(dir)
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			im := plant(t, sock)
			chmod(t, sock, 0o600)
			tc.spoil(t, base, dir, sock)
			var log logLines
			var starts atomic.Int32
			kc := &Client{Socket: sock, Logger: slog.New(slog.NewTextHandler(&log, nil)), Start: func() error { starts.Add(1); return nil }}
			reason := strings.NewReplacer("%BASE%", base, "%SOCK%", sock).Replace(tc.reason)
			directlyOnce(t, f, kc, &log, reason)
			im.stop()
			if n, b := im.accepted.Load(), im.received.Load(); n != 0 || b != 0 {
				t.Fatalf("the impostor accepted %d connections and received %d bytes", n, b)
			}
			if starts.Load() != 0 {
				t.Fatal("a keeper was started in an untrusted place")
			}
		})
	}
}

// impostorHelperEnv makes the test binary listen, as another uid, on the
// socket it inherits as fd 3 (TestImpostorHelperProcess).
const impostorHelperEnv = "STADO_KEEPER_IMPOSTOR_HELPER"

// TestAServerOfAnotherUIDIsSentNothing is the case no file check catches:
// the socket and its directories are the user's, but the process that
// listens on it runs as another uid (it was handed the bound socket). The
// client learns so from the kernel (SO_PEERCRED), before writing.
func TestAServerOfAnotherUIDIsSentNothing(t *testing.T) {
	helper := foreignHelper(t)
	f := newFixture(t)
	sock := keeperSocketPath(t)
	if err := os.Mkdir(filepath.Dir(sock), 0o700); err != nil {
		t.Fatal(err)
	}
	// bound here (root's socket file, 0600), listened on by nobody: the
	// peer credentials a client reads are the listener's
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	syscall.CloseOnExec(fd)
	bound := os.NewFile(uintptr(fd), "keeper.sock")
	defer bound.Close()
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: sock}); err != nil {
		t.Fatal(err)
	}
	chmod(t, sock, 0o600)
	cmd := asNobody(exec.Command(helper, "-test.run=^TestImpostorHelperProcess$", "-test.count=1"))
	cmd.Env = append(os.Environ(), impostorHelperEnv+"=1")
	cmd.ExtraFiles = []*os.File{bound}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	bound.Close() // the impostor's alone: its exit closes the socket
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	out := bufio.NewScanner(stdout)
	if !out.Scan() || out.Text() != "LISTENING" {
		t.Fatalf("the impostor did not listen: %q %v", out.Text(), out.Err())
	}
	var log logLines
	kc := &Client{Socket: sock, Logger: slog.New(slog.NewTextHandler(&log, nil))}
	directlyOnce(t, f, kc, &log, "keeper socket is served by uid 65534, not 0")
	// the client closed each connection without a byte: the impostor
	// reports what it received once the three of them ended
	var lines []string
	for out.Scan() {
		lines = append(lines, out.Text())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("impostor: %v (%q)", err, lines)
	}
	if want := "RECEIVED 3 connections 0 bytes"; len(lines) == 0 || lines[0] != want {
		t.Fatalf("the impostor reported %q, want %q", lines, want)
	}
}

// TestImpostorHelperProcess is not a test: run with impostorHelperEnv set,
// it listens on the bound socket of fd 3, accepts three connections,
// reads each once (a request's first bytes, or its end) and prints how
// many bytes they carried.
func TestImpostorHelperProcess(t *testing.T) {
	if os.Getenv(impostorHelperEnv) == "" {
		return
	}
	if err := syscall.Listen(3, 8); err != nil {
		fmt.Println("listen:", err)
		return
	}
	ln, err := net.FileListener(os.NewFile(3, "keeper.sock"))
	if err != nil {
		fmt.Println("listen:", err)
		return
	}
	fmt.Println("LISTENING")
	var total int64
	for range 3 {
		_ = ln.(*net.UnixListener).SetDeadline(time.Now().Add(keeperDeadline))
		c, err := ln.Accept()
		if err != nil {
			fmt.Println("accept:", err)
			return
		}
		_ = c.SetReadDeadline(time.Now().Add(keeperDeadline))
		n, _ := c.Read(make([]byte, 4096)) // a request's first bytes, or the end
		total += int64(n)
		c.Close()
	}
	fmt.Println("RECEIVED 3 connections " + strconv.FormatInt(total, 10) + " bytes")
}

// TestTheKeeperRefusesADirectoryNotItsUsersAlone: Serve neither creates
// its socket in, nor listens from, a directory its clients would not
// trust; a client that would start it there dials directly instead.
func TestTheKeeperRefusesADirectoryNotItsUsersAlone(t *testing.T) {
	for _, tc := range []struct {
		name   string
		root   bool
		spoil  func(t *testing.T, base, dir string)
		reason string
	}{
		// another uid's directory
		{"directory of another uid", true, func(t *testing.T, _, dir string) { chown(t, dir) }, "belongs to uid 65534"},
		// a directory its group may write
		{"group-writable directory", false, func(t *testing.T, _, dir string) { chmod(t, dir, 0o770) }, "writable by its group or others"},
		// a parent of another uid, which could swap the directory
		{"parent of another uid", true, func(t *testing.T, base, _ string) { chown(t, base) }, "parent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.root && os.Geteuid() != 0 {
				testbed.Unavailable(t, "changing a file's owner needs root")
			}
			f := newFixture(t)
			sock := keeperSocketPath(t)
			dir := filepath.Dir(sock)
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			tc.spoil(t, filepath.Dir(dir), dir)
			err := Serve(context.Background(), Config{Socket: sock, Idle: time.Second})
			if !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("Serve: %v, want ErrUntrusted saying %q", err, tc.reason)
			}
			if _, err := os.Lstat(sock); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("Serve left a socket: %v", err)
			}
			// a client that would start one never does, and dials directly
			var log logLines
			kc := &Client{Socket: sock, Logger: slog.New(slog.NewTextHandler(&log, nil)), Start: func() error {
				t.Error("a keeper was started in an untrusted directory")
				return nil
			}}
			directlyOnce(t, f, kc, &log, tc.reason)
		})
	}
}

// TestATrustedKeeperIsRiddenAndSaysNothing is the ordinary path: a keeper
// started on demand under $XDG_RUNTIME_DIR creates its directory 0700, the
// socket passes every check, calls ride its one connection, and the client
// logs nothing.
func TestATrustedKeeperIsRiddenAndSaysNothing(t *testing.T) {
	f := newFixture(t)
	runtime, err := os.MkdirTemp("", "stado-xdg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(runtime) })
	t.Setenv("XDG_RUNTIME_DIR", runtime)
	sock := filepath.Join(runtime, "stado", "keeper.sock")
	var log logLines
	var starts atomic.Int32
	kc := &Client{Logger: slog.New(slog.NewTextHandler(&log, nil)), Start: func() error {
		starts.Add(1)
		launchKeeper(t, Config{Socket: sock})
		return nil
	}}
	for range 3 {
		pool := sshclient.NewPool(f.dialer())
		pool.Transport = kc
		if out, _, err := pool.Run(context.Background(), f.srv.Target("web1"), []string{"version"}, nil); err != nil || string(out) != "version" {
			t.Fatalf("%q %v", out, err)
		}
		pool.Close()
	}
	if starts.Load() != 1 || f.srv.Accepted.Load() != 1 {
		t.Fatalf("%d starts and %d connections, want one kept connection", starts.Load(), f.srv.Accepted.Load())
	}
	if !log.empty() {
		t.Fatalf("the client logged %q riding a trusted keeper", log.lines())
	}
	st, err := os.Stat(filepath.Dir(sock))
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("socket directory %v (%v), want created 0700", st.Mode(), err)
	}
	if err := checkSocketFile(sock, os.Geteuid()); err != nil {
		t.Fatalf("the keeper's own socket: %v", err)
	}
}
