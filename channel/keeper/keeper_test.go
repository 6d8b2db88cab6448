package keeper

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/channel/channeltest"
	"github.com/wisent/stado/channel/sshclient"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/tests/testbed"
)

// keeperDeadline bounds every wait on a keeper in these tests; it is a
// deadline for polling, never a measured duration.
const keeperDeadline = 10 * time.Second

// keeperSocketPath is a socket path in a new private directory short
// enough for a unix socket address (t.TempDir paths can be too long).
func keeperSocketPath(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "stado-keeper")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "run", "keeper.sock")
}

// runningKeeper is a Serve in this process.
type runningKeeper struct {
	socket string
	stop   context.CancelFunc
	done   chan error // receives Serve's result
}

// startKeeper runs Serve with cfg (its Socket defaulted to a fresh
// path) and waits until it answers; cleanup stops it and waits for it.
func startKeeper(t *testing.T, cfg Config) *runningKeeper {
	t.Helper()
	k := launchKeeper(t, cfg)
	waitUntil(t, "the keeper answers on "+k.socket, func() bool {
		c, err := net.Dial("unix", k.socket)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return k
}

// launchKeeper starts Serve without waiting for its socket.
func launchKeeper(t *testing.T, cfg Config) *runningKeeper {
	t.Helper()
	if cfg.Socket == "" {
		cfg.Socket = keeperSocketPath(t)
	}
	ctx, cancel := context.WithCancel(context.Background())
	k := &runningKeeper{socket: cfg.Socket, stop: cancel, done: make(chan error, 1)}
	go func() { k.done <- Serve(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-k.done:
		case <-time.After(keeperDeadline):
			t.Error("the keeper did not stop")
		}
	})
	return k
}

// waitUntil polls cond until it holds, failing the test at keeperDeadline.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(keeperDeadline)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("timed out waiting until %s", what)
		case <-tick.C:
		}
	}
}

// exited waits for Serve to return and gives its result.
func (k *runningKeeper) exited(t *testing.T) error {
	t.Helper()
	select {
	case err := <-k.done:
		k.done <- err // for cleanup
		return err
	case <-time.After(keeperDeadline):
		t.Fatal("the keeper did not exit")
		return nil
	}
}

func TestASecondRunThroughTheKeeperReusesItsConnection(t *testing.T) {
	f := newFixture(t)
	k := startKeeper(t, Config{})
	target := f.srv.Target("web1")
	// two clients, as two stado invocations would hold
	for i := range 2 {
		kc := &Client{Socket: k.socket}
		stdout, _, err := kc.Run(context.Background(), target, f.dialer(), []string{"version"}, nil)
		if err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
		if string(stdout) != "version" {
			t.Fatalf("run %d: stdout %q", i+1, stdout)
		}
	}
	if n := f.srv.Accepted.Load(); n != 1 {
		t.Fatalf("the server saw %d connections (handshakes), want 1", n)
	}
	if n := f.srv.Commands.Load(); n != 2 {
		t.Fatalf("the server ran %d commands, want 2", n)
	}
}

func TestConnectionsAreKeptApartByIdentityAndKnownHosts(t *testing.T) {
	f := newFixture(t)
	k := startKeeper(t, Config{})
	kc := &Client{Socket: k.socket}
	target := f.srv.Target("web1")
	other := filepath.Join(f.home, "other_known_hosts")
	channeltest.KnownHostsWith(t, other, f.srv.HostSigner.PublicKey(), f.srv.HostPort())
	second := f.dialer()
	second.KnownHostsPath = other
	for _, d := range []*sshclient.Dialer{f.dialer(), second, f.dialer(), second} {
		if _, _, err := kc.Run(context.Background(), target, d, []string{"version"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.srv.Accepted.Load(); n != 2 {
		t.Fatalf("the server saw %d connections, want one per known_hosts file", n)
	}
}

func TestAChangedKnownHostsEntryRefusesTheKeptConnection(t *testing.T) {
	f := newFixture(t)
	k := startKeeper(t, Config{})
	kc := &Client{Socket: k.socket}
	target := f.srv.Target("web1")
	ctx := context.Background()
	if _, _, err := kc.Run(ctx, target, f.dialer(), []string{"version"}, nil); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(f.knownHosts)
	if err != nil {
		t.Fatal(err)
	}
	channeltest.KnownHostsWith(t, f.knownHosts, channeltest.NewSigner(t).PublicKey(), f.srv.HostPort())

	_, _, err = kc.Run(ctx, target, f.dialer(), []string{"version"}, nil)
	re := remoteErr(t, err, "web1", channel.StageHostKey)
	var he *sshclient.HostKeyError
	if !errors.As(err, &he) {
		t.Fatalf("%v carries no *sshclient.HostKeyError", err)
	}
	if he.Kind != sshclient.HostKeyChanged || he.RefusalCode() != "host_key_mismatch" {
		t.Fatalf("host key error %+v, want changed (host_key_mismatch)", he)
	}
	if want := ssh.FingerprintSHA256(f.srv.HostSigner.PublicKey()); he.Fingerprint != want {
		t.Fatalf("fingerprint %s, want the server's %s", he.Fingerprint, want)
	}
	if f.srv.Commands.Load() != 1 {
		t.Fatal("a command ran over a connection whose host key is no longer known")
	}
	if n := f.srv.Accepted.Load(); n != 1 {
		t.Fatalf("the refusal came from %d connections, want the kept one", n)
	}

	// a fresh connection is refused with the same error
	pool := sshclient.NewPool(f.dialer())
	defer pool.Close()
	_, _, direct := pool.Run(ctx, target, []string{"version"}, nil)
	var dre *channel.RemoteError
	var dhe *sshclient.HostKeyError
	if !errors.As(direct, &dre) || !errors.As(direct, &dhe) {
		t.Fatalf("direct run: %v", direct)
	}
	if !reflect.DeepEqual(dhe, he) || dre.Address != re.Address || dre.Error() != re.Error() {
		t.Fatalf("through the keeper %#v (%v), directly %#v (%v)", he, re, dhe, dre)
	}

	// the refused connection was closed: restoring the entry dials anew
	writeFile(t, f.knownHosts, string(good))
	if _, _, err := kc.Run(ctx, target, f.dialer(), []string{"version"}, nil); err != nil {
		t.Fatal(err)
	}
	if n := f.srv.Accepted.Load(); n != 3 { // kept, direct, new kept
		t.Fatalf("the server saw %d connections, want 3", n)
	}
}

func TestARevokedHostKeyRefusesTheKeptConnection(t *testing.T) {
	f := newFixture(t)
	k := startKeeper(t, Config{})
	kc := &Client{Socket: k.socket}
	target := f.srv.Target("web1")
	if _, _, err := kc.Run(context.Background(), target, f.dialer(), []string{"version"}, nil); err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(f.knownHosts)
	revoked := "@revoked * " + string(ssh.MarshalAuthorizedKey(f.srv.HostSigner.PublicKey()))
	writeFile(t, f.knownHosts, revoked+string(old))
	_, _, err := kc.Run(context.Background(), target, f.dialer(), []string{"version"}, nil)
	remoteErr(t, err, "web1", channel.StageHostKey)
	var he *sshclient.HostKeyError
	if !errors.As(err, &he) || he.Kind != sshclient.HostKeyRevoked || he.RefusalCode() != "host_key_mismatch" {
		t.Fatalf("error %v, want a revoked host key", err)
	}
}

func TestAKeptConnectionRedialsWhenKnownHostsNowRecordsAnotherKeyType(t *testing.T) {
	home := channeltest.IsolatedHome(t)
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecSigner, _ := ssh.NewSignerFromKey(ecKey)
	edSigner := channeltest.NewSigner(t)
	srv := channeltest.StartServer(t, ecSigner, edSigner)
	id, pub := channeltest.ClientKey(t, home, "id")
	srv.Authorize(pub)
	kh := filepath.Join(home, ".ssh", "known_hosts")
	channeltest.KnownHostsWith(t, kh, edSigner.PublicKey(), srv.HostPort())
	d := &sshclient.Dialer{KnownHostsPath: kh, IdentityFiles: []string{id}}
	k := startKeeper(t, Config{})
	kc := &Client{Socket: k.socket}
	if _, _, err := kc.Run(context.Background(), srv.Target("web1"), d, []string{"version"}, nil); err != nil {
		t.Fatal(err)
	}
	// the host's ed25519 key gives way to its ECDSA key: a fresh connection
	// would ask for ECDSA and be accepted, so the keeper's is too
	channeltest.KnownHostsWith(t, kh, ecSigner.PublicKey(), srv.HostPort())
	if _, _, err := kc.Run(context.Background(), srv.Target("web1"), d, []string{"version"}, nil); err != nil {
		t.Fatalf("a host whose recorded key changed type was refused: %v", err)
	}
	if n := srv.Accepted.Load(); n != 2 {
		t.Fatalf("the server saw %d connections, want 2 (the kept one replaced)", n)
	}
}

func TestKeeperRunReportsWhatPoolRunReports(t *testing.T) {
	refusalDoc, _ := json.Marshal(channel.RefusalDocument{Kind: channel.KindRefusal, Code: string(channel.CodeInvalidUnit), Message: "not a unit"})
	cases := []struct {
		name    string
		handler func(cmd string, stdin io.Reader, stdout, stderr io.Writer) int
		stdin   []byte
	}{
		// success, stdin carried to the command and back
		{"stdin echoed", func(_ string, in io.Reader, out, _ io.Writer) int { io.Copy(out, in); return 0 }, []byte("unit file\x00bytes")},
		// empty but present stdin
		{"empty stdin", func(_ string, in io.Reader, out, _ io.Writer) int { io.Copy(out, in); return 0 }, []byte{}},
		// a nonzero exit keeps the tail of stderr
		{"exit 1", func(_ string, _ io.Reader, out, errw io.Writer) int {
			io.WriteString(out, "partial")
			for i := range 30 {
				io.WriteString(errw, "line "+strconv.Itoa(i)+"\n")
			}
			return 1
		}, nil},
		// exit 3 with the refusal document is a remote refusal
		{"refusal", func(_ string, _ io.Reader, out, _ io.Writer) int { out.Write(refusalDoc); return channel.ExitRefused }, nil},
		// exit 3 without it is a plain remote exit
		{"exit 3 without document", func(_ string, _ io.Reader, out, _ io.Writer) int {
			io.WriteString(out, "{}")
			return channel.ExitRefused
		}, nil},
		// output larger than one frame arrives whole
		{"large output", func(_ string, _ io.Reader, out, _ io.Writer) int {
			out.Write(bytes.Repeat([]byte("0123456789abcdef"), 3*keeperChunk/16+7))
			return 0
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.srv.SetHandler(tc.handler)
			// these handlers are not the channel program: compare one
			// execution with one execution
			k := startKeeper(t, Config{SessionStart: -1})
			target := f.srv.Target("web1")
			argv := []string{"/usr/local/bin/stado", "host", "channel", "unit-show", "system", "a b.service"}
			pool := sshclient.NewPool(f.dialer())
			defer pool.Close()
			wantOut, wantErr, wantE := pool.Run(context.Background(), target, argv, tc.stdin)
			gotOut, gotErr, gotE := (&Client{Socket: k.socket}).Run(context.Background(), target, f.dialer(), argv, tc.stdin)
			if !bytes.Equal(gotOut, wantOut) || !bytes.Equal(gotErr, wantErr) {
				t.Fatalf("through the keeper stdout %q stderr %q; directly %q %q", short(gotOut), short(gotErr), short(wantOut), short(wantErr))
			}
			if (gotE == nil) != (wantE == nil) {
				t.Fatalf("through the keeper %v; directly %v", gotE, wantE)
			}
			if wantE == nil {
				return
			}
			var g, w *channel.RemoteError
			if !errors.As(gotE, &g) || !errors.As(wantE, &w) {
				t.Fatalf("through the keeper %T %v; directly %T %v", gotE, gotE, wantE, wantE)
			}
			if g.Error() != w.Error() || g.Stage != w.Stage || g.ExitStatus != w.ExitStatus || g.StderrTail != w.StderrTail || g.Address != w.Address {
				t.Fatalf("through the keeper %+v; directly %+v", g, w)
			}
			var gr, wr *channel.Refusal
			if errors.As(wantE, &wr) && (!errors.As(gotE, &gr) || gr.Code != wr.Code) {
				t.Fatalf("through the keeper the refusal is %v, directly %v", gr, wr)
			}
		})
	}
}

func short(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "..." + strconv.Itoa(len(b)) + " bytes"
	}
	return string(b)
}

func TestFailuresBeforeTheCommandReadAsTheyDoDirectly(t *testing.T) {
	cases := []struct {
		name  string
		stage channel.Stage
		setup func(f *fixture) *sshclient.Dialer
	}{
		// no known_hosts: the dialer's unknown-key refusal
		{"unknown host key", channel.StageHostKey, func(f *fixture) *sshclient.Dialer { os.Remove(f.knownHosts); return f.dialer() }},
		// an identity the server does not accept
		{"refused identity", channel.StageAuth, func(f *fixture) *sshclient.Dialer {
			d := f.dialer()
			other, _ := channeltest.ClientKey(t, f.home, "id_other")
			d.IdentityFiles = []string{other}
			return d
		}},
		// a port nothing listens on
		{"nothing listens", channel.StageConnect, func(f *fixture) *sshclient.Dialer {
			ln, _ := net.Listen("tcp", "127.0.0.1:0")
			f.srv.Port = ln.Addr().(*net.TCPAddr).Port
			ln.Close()
			return f.dialer()
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			d := tc.setup(f)
			k := startKeeper(t, Config{})
			target := f.srv.Target("web1")
			pool := sshclient.NewPool(d)
			defer pool.Close()
			_, _, want := pool.Run(context.Background(), target, []string{"version"}, nil)
			_, _, got := (&Client{Socket: k.socket}).Run(context.Background(), target, d, []string{"version"}, nil)
			g := remoteErr(t, got, "web1", tc.stage)
			w := remoteErr(t, want, "web1", tc.stage)
			if g.Error() != w.Error() || g.Address != w.Address {
				t.Fatalf("through the keeper %q at %s; directly %q at %s", g, g.Address, w, w.Address)
			}
			var gh, wh *sshclient.HostKeyError
			if errors.As(want, &wh) && (!errors.As(got, &gh) || !reflect.DeepEqual(gh, wh)) {
				t.Fatalf("host key error through the keeper %+v, directly %+v", gh, wh)
			}
		})
	}
}

func TestCancellingTheCallEndsItAndKeepsTheKeeper(t *testing.T) {
	f := newFixture(t)
	release := make(chan struct{})
	f.srv.SetHandler(func(cmd string, _ io.Reader, stdout, _ io.Writer) int {
		if cmd == "wait" {
			io.WriteString(stdout, "waiting")
			<-release
		}
		return 0
	})
	defer close(release)
	k := startKeeper(t, Config{})
	kc := &Client{Socket: k.socket}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, _, err := kc.Run(ctx, f.srv.Target("web1"), f.dialer(), []string{"wait"}, nil)
		errc <- err
	}()
	waitUntil(t, "the command runs", func() bool { return f.srv.Commands.Load() == 1 })
	cancel()
	err := <-errc
	re := remoteErr(t, err, "web1", channel.StageRemoteExit)
	if !errors.Is(err, context.Canceled) || re.ExitStatus != -1 {
		t.Fatalf("error %v, want the context's at remote exit -1", err)
	}
	if _, _, err := kc.Run(context.Background(), f.srv.Target("web1"), f.dialer(), []string{"version"}, nil); err != nil {
		t.Fatalf("the keeper did not survive a cancelled call: %v", err)
	}
}

func TestTheKeeperExitsAfterItsIdlePeriodAndRemovesItsSocket(t *testing.T) {
	f := newFixture(t)
	k := startKeeper(t, Config{Idle: 20 * time.Millisecond})
	// a call may or may not find it still there; either way nothing breaks
	_, _, err := (&Client{Socket: k.socket}).Run(context.Background(), f.srv.Target("web1"), f.dialer(), []string{"version"}, nil)
	if err != nil && !errors.Is(err, ErrUnavailable) {
		t.Fatal(err)
	}
	if err := k.exited(t); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if _, err := os.Lstat(k.socket); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the socket is still there after the keeper exited: %v", err)
	}
	// its lock is free: a new keeper serves the same socket
	startKeeper(t, Config{Socket: k.socket})
}

func TestACallInFlightHoldsAnIdleKeeper(t *testing.T) {
	f := newFixture(t)
	release := make(chan struct{})
	f.srv.SetHandler(func(cmd string, _ io.Reader, stdout, _ io.Writer) int {
		if cmd == "wait" {
			<-release
		}
		io.WriteString(stdout, cmd)
		return 0
	})
	// an idle period far shorter than the call; the first client starts a
	// keeper again should the first one go idle before the call reaches it
	sock := keeperSocketPath(t)
	cfg := Config{Socket: sock, Idle: 50 * time.Millisecond}
	launchKeeper(t, cfg)
	starter := &Client{Socket: sock, Start: func() error { launchKeeper(t, cfg); return nil }}
	errc := make(chan error, 1)
	go func() {
		_, _, err := starter.Run(context.Background(), f.srv.Target("web1"), f.dialer(), []string{"wait"}, nil)
		errc <- err
	}()
	waitUntil(t, "the command runs", func() bool { return f.srv.Commands.Load() == 1 })
	// while the call runs the keeper cannot go idle: a client that cannot
	// start one is still served
	plain := &Client{Socket: sock}
	if _, _, err := plain.Run(context.Background(), f.srv.Target("web1"), f.dialer(), []string{"version"}, nil); err != nil {
		t.Fatalf("a keeper with a call in flight refused another: %v", err)
	}
	close(release)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the keeper exits once idle", func() bool {
		_, err := os.Lstat(sock)
		return errors.Is(err, fs.ErrNotExist)
	})
}

func TestAPeerOfAnotherUIDIsRefused(t *testing.T) {
	self := os.Geteuid()
	if err := checkPeer(self+1, self); err == nil {
		t.Fatal("a peer of another uid was admitted")
	}
	if err := checkPeer(self, self); err != nil {
		t.Fatalf("a peer of the keeper's own uid was refused: %v", err)
	}
	// the kernel reports this process's uid for a real peer
	sock := keeperSocketPath(t)
	os.MkdirAll(filepath.Dir(sock), 0o700)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sc, err := ln.AcceptUnix()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	uid, err := peerUID(sc)
	if err != nil || uid != self {
		t.Fatalf("peer uid %d (%v), want %d", uid, err, self)
	}
}

// peerHelperEnv makes the test binary act as a keeper client run as
// another uid (TestForeignPeerHelperProcess).
const peerHelperEnv = "STADO_KEEPER_PEER_HELPER"

// nobody is the uid (and gid) tests run a foreign process as.
const nobody = 65534

// foreignHelper is a copy of this test binary that uid nobody may run;
// the test needs root to run it as nobody.
func foreignHelper(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		testbed.Unavailable(t, "running a process as another uid needs root")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.MkdirTemp("", "stado-peer")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(bin) })
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	helper := filepath.Join(bin, "keeper.test")
	if err := os.WriteFile(helper, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	return helper
}

// asNobody is cmd run as uid and gid nobody from /.
func asNobody(cmd *exec.Cmd) *exec.Cmd {
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	return cmd
}

func TestAPeerRunningAsAnotherUIDIsRefusedOnTheKernelsWord(t *testing.T) {
	helper := foreignHelper(t)
	k := startKeeper(t, Config{})
	// permissions a mistake could leave: only the peer check stands
	os.Chmod(filepath.Dir(filepath.Dir(k.socket)), 0o711)
	os.Chmod(filepath.Dir(k.socket), 0o711)
	os.Chmod(k.socket, 0o666)
	cmd := asNobody(exec.Command(helper, "-test.run=^TestForeignPeerHelperProcess$", "-test.count=1", "-test.v"))
	cmd.Env = append(os.Environ(), peerHelperEnv+"="+k.socket)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	want := "RESULT: unavailable: peer uid " + strconv.Itoa(nobody) + " is not the keeper's uid 0"
	if !strings.Contains(string(out), want) {
		t.Fatalf("a client of uid %d got\n%s\nwant %q", nobody, out, want)
	}
}

// TestForeignPeerHelperProcess is not a test: run with peerHelperEnv set,
// it sends one request to the keeper on that socket as the wire carries
// it (a Client would not trust another uid's socket and send nothing) and
// prints the keeper's answer.
func TestForeignPeerHelperProcess(t *testing.T) {
	sock := os.Getenv(peerHelperEnv)
	if sock == "" {
		return
	}
	conn, err := net.Dial("unix", sock)
	if err != nil {
		fmt.Println("RESULT: dial:", err)
		return
	}
	defer conn.Close()
	req := &keeperRequest{
		Endpoint:   keeperEndpoint{Host: "web1", Address: "127.0.0.1", Port: 1, User: "op"},
		KnownHosts: "/nonexistent/known_hosts", NoAgent: true, Argv: []string{"version"},
	}
	_ = writeFrame(conn, &keeperFrame{Kind: frameRequest, Version: keeperProtocol, Request: req})
	_ = writeFrame(conn, &keeperFrame{Kind: frameStdinEnd})
	var f keeperFrame
	if err := readFrame(bufio.NewReader(conn), &f); err != nil {
		fmt.Println("RESULT: read:", err)
		return
	}
	fmt.Printf("RESULT: %s: %s\n", f.Kind, f.Reason)
}

func TestTheSocketIsPrivateToItsUser(t *testing.T) {
	runtime, err := os.MkdirTemp("", "stado-xdg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(runtime) })
	t.Setenv("XDG_RUNTIME_DIR", runtime)
	sock, err := DefaultSocket()
	if err != nil || sock != filepath.Join(runtime, "stado", "keeper.sock") {
		t.Fatalf("default socket %q (%v)", sock, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, Config{}) }()
	defer func() { cancel(); <-done }()
	waitUntil(t, "the keeper listens on the default socket", func() bool {
		_, err := os.Lstat(sock)
		return err == nil
	})
	st, err := os.Lstat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Type() != fs.ModeSocket || st.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v, want a 0600 socket", st.Mode())
	}
	dir, err := os.Stat(filepath.Dir(sock))
	if err != nil || dir.Mode().Perm() != 0o700 {
		t.Fatalf("socket directory mode %v (%v), want 0700", dir.Mode(), err)
	}
	// a directory others may write to is refused
	open := filepath.Join(runtime, "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o777)
	if err := Serve(context.Background(), Config{Socket: filepath.Join(open, "k.sock")}); err == nil || !strings.Contains(err.Error(), "writable by its group or others") {
		t.Fatalf("Serve in a world-writable directory: %v", err)
	}
}

func TestASecondKeeperOnTheSameSocketStandsDown(t *testing.T) {
	k := startKeeper(t, Config{})
	if err := Serve(context.Background(), Config{Socket: k.socket}); !errors.Is(err, ErrRunning) {
		t.Fatalf("second keeper: %v, want ErrRunning", err)
	}
	if c, err := net.Dial("unix", k.socket); err != nil {
		t.Fatalf("the first keeper's socket is gone: %v", err)
	} else {
		c.Close()
	}
}

func TestAStaleSocketIsReplaced(t *testing.T) {
	sock := keeperSocketPath(t)
	if err := os.MkdirAll(filepath.Dir(sock), 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close() // a socket file nobody serves, as a killed keeper leaves
	startKeeper(t, Config{Socket: sock})
}

func TestWithNothingListeningTheClientReportsKeeperUnavailable(t *testing.T) {
	f := newFixture(t)
	target := f.srv.Target("web1")
	sock := keeperSocketPath(t)
	var started atomic.Int32
	cases := []struct {
		name   string
		client *Client
	}{
		// no way to start one
		{"no start", &Client{Socket: sock}},
		// starting one fails
		{"start fails", &Client{Socket: sock, Start: func() error { started.Add(1); return errors.New("no executable") }}},
		// one starts but never answers
		{"start never answers", &Client{Socket: sock, StartTimeout: 20 * time.Millisecond, Start: func() error { started.Add(1); return nil }}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := tc.client.Run(context.Background(), target, f.dialer(), []string{"version"}, nil)
			if !errors.Is(err, ErrUnavailable) {
				t.Fatalf("error %v, want ErrUnavailable", err)
			}
			// the caller falls back to a direct connection
			pool := sshclient.NewPool(f.dialer())
			defer pool.Close()
			if out, _, err := pool.Run(context.Background(), target, []string{"version"}, nil); err != nil || string(out) != "version" {
				t.Fatalf("direct fallback: %q %v", out, err)
			}
		})
	}
	if started.Load() != 2 {
		t.Fatalf("Start was called %d times, want once per client that has it", started.Load())
	}
	if f.srv.Commands.Load() != 3 {
		t.Fatalf("the host ran %d commands, want only the 3 fallbacks", f.srv.Commands.Load())
	}
}

func TestTheClientStartsAKeeperOnDemandOnce(t *testing.T) {
	f := newFixture(t)
	sock := keeperSocketPath(t)
	var starts atomic.Int32
	kc := &Client{Socket: sock, Start: func() error {
		starts.Add(1)
		launchKeeper(t, Config{Socket: sock})
		return nil
	}}
	for range 3 {
		if _, _, err := kc.Run(context.Background(), f.srv.Target("web1"), f.dialer(), []string{"version"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if starts.Load() != 1 || f.srv.Accepted.Load() != 1 {
		t.Fatalf("%d starts and %d connections, want 1 and 1", starts.Load(), f.srv.Accepted.Load())
	}
}

func TestAKeeperOfAnotherProtocolRefusesAndMakesWayForANewerOne(t *testing.T) {
	k := startKeeper(t, Config{})
	c, err := net.Dial("unix", k.socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := writeFrame(c, &keeperFrame{Kind: frameRequest, Version: keeperProtocol + 1, Request: &keeperRequest{}}); err != nil {
		t.Fatal(err)
	}
	var f keeperFrame
	if err := readFrame(bufio.NewReader(c), &f); err != nil {
		t.Fatal(err)
	}
	if f.Kind != frameUnavailable || f.Version != keeperProtocol {
		t.Fatalf("reply %+v, want unavailable from protocol %d", f, keeperProtocol)
	}
	if err := k.exited(t); err != nil {
		t.Fatal(err)
	}
}

func TestAnOversizedFrameIsRefusedBeforeItIsRead(t *testing.T) {
	var b bytes.Buffer
	binary.Write(&b, binary.BigEndian, uint32(maxKeeperFrame+1))
	var f keeperFrame
	if err := readFrame(&b, &f); err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Fatalf("read an oversized frame: %v", err)
	}
	if err := writeFrame(io.Discard, &keeperFrame{Kind: frameStdout, Data: make([]byte, maxKeeperFrame)}); err == nil {
		t.Fatal("wrote an oversized frame")
	}
}

func TestTheRequestCarriesPathsAndTheAgentSocketNeverKeys(t *testing.T) {
	f := newFixture(t)
	t.Setenv("SSH_AUTH_SOCK", "/run/agent.sock")
	t.Chdir(f.home)
	d := &sshclient.Dialer{KnownHostsPath: "kh", IdentityFiles: []string{f.identity}}
	ep, err := d.Resolve(f.srv.Target("web1"))
	if err != nil {
		t.Fatal(err)
	}
	req, err := newKeeperRequest(d, ep, []string{"version"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if req.KnownHosts != filepath.Join(f.home, "kh") || req.AgentSocket != "/run/agent.sock" {
		t.Fatalf("request %+v: want absolute known_hosts and the agent socket", req)
	}
	b, _ := json.Marshal(req)
	key, _ := os.ReadFile(f.identity)
	block := strings.Split(strings.TrimSpace(string(key)), "\n")[1] // a line of the key's body
	if bytes.Contains(b, []byte(block)) || bytes.Contains(b, []byte("PRIVATE KEY")) {
		t.Fatalf("the request carries key material: %s", b)
	}
	if err := req.validate(); err != nil {
		t.Fatal(err)
	}
}

func TestStartProcessDetachesIt(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		testbed.Unavailable(t, "needs /proc")
	}
	dir := t.TempDir()
	report := filepath.Join(dir, "report")
	t.Setenv("SSH_AUTH_SOCK", "/run/agent.sock")
	script := `fds=$(readlink /proc/$$/fd/0 /proc/$$/fd/1 /proc/$$/fd/2); echo $$ > "$1.tmp"; echo "$fds" >> "$1.tmp"; cat /proc/self/stat >> "$1.tmp"; pwd >> "$1.tmp"; echo "agent=${SSH_AUTH_SOCK-unset}" >> "$1.tmp"; mv "$1.tmp" "$1"`
	if err := StartProcess("/bin/sh", []string{"-c", script, "sh", report}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the started process reports", func() bool { _, err := os.Stat(report); return err == nil })
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 7 {
		t.Fatalf("report %q", b)
	}
	for _, fd := range lines[1:4] {
		if fd != os.DevNull {
			t.Fatalf("a standard stream is %q, want %s", fd, os.DevNull)
		}
	}
	// /proc/PID/stat: pid (comm) state ppid pgrp session ...
	stat := lines[4]
	fields := strings.Fields(stat[strings.LastIndexByte(stat, ')')+1:])
	if fields[3] != lines[0] {
		t.Fatalf("session %s, want the started shell's own (%s): it did not get a new session", fields[3], lines[0])
	}
	if lines[5] != "/" {
		t.Fatalf("working directory %q, want /", lines[5])
	}
	if lines[6] != "agent=unset" {
		t.Fatalf("the keeper inherited the caller's agent: %s", lines[6])
	}
}

func TestAPoolWithAKeeperRidesItAndFallsBackWithoutOne(t *testing.T) {
	f := newFixture(t)
	target := f.srv.Target("web1")
	sock := keeperSocketPath(t)
	// nothing listens and nothing starts one: the pool dials directly
	pool := sshclient.NewPool(f.dialer())
	pool.Transport = &Client{Socket: sock}
	if out, _, err := pool.Run(context.Background(), target, []string{"version"}, nil); err != nil || string(out) != "version" {
		t.Fatalf("fallback: %q %v", out, err)
	}
	pool.Close()
	if n := f.srv.Accepted.Load(); n != 1 {
		t.Fatalf("%d connections, want the direct one", n)
	}
	// with a keeper, two pools (two commands) share its one connection
	startKeeper(t, Config{Socket: sock})
	for range 2 {
		pool := sshclient.NewPool(f.dialer())
		pool.Transport = &Client{Socket: sock}
		if _, _, err := pool.Run(context.Background(), target, []string{"version"}, nil); err != nil {
			t.Fatal(err)
		}
		pool.Close()
	}
	if n := f.srv.Accepted.Load(); n != 2 {
		t.Fatalf("%d connections, want the direct one and the kept one", n)
	}
}

func TestKeptCallsRideOneRemoteSession(t *testing.T) {
	f := newFixture(t)
	host := &restartingHost{}
	f.srv.SetHandler(func(cmd string, stdin io.Reader, stdout, stderr io.Writer) int {
		return channel.Serve(context.Background(), cmd, stdin, stdout, stderr, host)
	})
	k := startKeeper(t, Config{})
	pool := sshclient.NewPool(f.dialer())
	pool.Transport = &Client{Socket: k.socket}
	defer pool.Close()
	c := &sshclient.Client{Pool: pool, Target: f.srv.Target("web1")}
	for i := range 3 {
		if _, err := c.UnitRestart(context.Background(), channel.UnitRef{Scope: channel.ScopeSystem, Unit: "a.service"}); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	// a refusal inside the session reads as a remote refusal, as it does
	// from its own execution
	_, err := c.UnitShow(context.Background(), channel.ShowRequest{Scope: channel.ScopeSystem, Units: []string{"com.example.x"}})
	if re := remoteErr(t, err, "web1", channel.StageRemoteRefusal); re.ExitStatus != channel.ExitRefused {
		t.Fatalf("refusal %+v", re)
	}
	if n := f.srv.Commands.Load(); n != 1 {
		t.Fatalf("the server ran %d commands, want 1 session", n)
	}
	if n := host.restarts.Load(); n != 3 {
		t.Fatalf("the host restarted %d times, want 3", n)
	}
}

func TestAHostWithoutSessionsIsCalledOneExecutionAtATime(t *testing.T) {
	f := newFixture(t)
	host := &restartingHost{}
	// an older remote program: it refuses the session verb as unknown
	f.srv.SetHandler(func(cmd string, stdin io.Reader, stdout, stderr io.Writer) int {
		if strings.HasSuffix(strings.TrimSuffix(cmd, "'"), "session") {
			io.WriteString(stdout, `{"kind":"stado.channel.refusal","protocol":1,"code":"unknown_verb","message":"unknown verb"}`+"\n")
			return channel.ExitRefused
		}
		return channel.Serve(context.Background(), cmd, stdin, stdout, stderr, host)
	})
	k := startKeeper(t, Config{})
	pool := sshclient.NewPool(f.dialer())
	pool.Transport = &Client{Socket: k.socket}
	defer pool.Close()
	c := &sshclient.Client{Pool: pool, Target: f.srv.Target("web1")}
	for i := range 2 {
		if _, err := c.UnitRestart(context.Background(), channel.UnitRef{Scope: channel.ScopeSystem, Unit: "a.service"}); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	// one refused session, then one execution per call (the refusal is
	// remembered for the connection)
	if n := f.srv.Commands.Load(); n != 3 {
		t.Fatalf("the server ran %d commands, want 3", n)
	}
}

// The first command after the keeper's idle exit: nothing listens, so it
// starts a keeper behind it and dials its hosts itself (a cold command, not
// a keeper's start and then a dial); when it ends it hands those hosts to
// that keeper, which connects to them and opens their channel sessions. The
// next command finds them kept: it rides that connection and session, and
// opens none of its own, even when it arrives while that session is still
// starting (the host here takes a while to answer a session's start).
func TestACommandWithoutAKeeperDialsDirectlyAndLeavesItsHostsKeptForTheNext(t *testing.T) {
	f := newFixture(t)
	host := &restartingHost{}
	f.srv.SetHandler(func(cmd string, stdin io.Reader, stdout, stderr io.Writer) int {
		if strings.HasSuffix(strings.TrimSuffix(cmd, "'"), "session") {
			time.Sleep(300 * time.Millisecond)
		}
		return channel.Serve(context.Background(), cmd, stdin, stdout, stderr, host)
	})
	sock := keeperSocketPath(t)
	var starts atomic.Int32
	command := func() {
		t.Helper()
		kc := &Client{Socket: sock, StartBehind: true, Start: func() error {
			starts.Add(1)
			launchKeeper(t, Config{Socket: sock})
			return nil
		}}
		pool := sshclient.NewPool(f.dialer())
		pool.Transport = kc
		c := &sshclient.Client{Pool: pool, Target: f.srv.Target("web1")}
		if _, err := c.UnitRestart(context.Background(), channel.UnitRef{Scope: channel.ScopeSystem, Unit: "a.service"}); err != nil {
			t.Fatal(err)
		}
		pool.Close()
	}

	command()
	if starts.Load() != 1 {
		t.Fatalf("%d keeper starts, want 1", starts.Load())
	}
	// the command's own connection, and the keeper's for the next one
	waitUntil(t, "the keeper connects to the handed-over host and opens its session", func() bool {
		return f.srv.Accepted.Load() == 2 && f.srv.Commands.Load() == 2
	})

	command()
	if a, c := f.srv.Accepted.Load(), f.srv.Commands.Load(); a != 2 || c != 2 {
		t.Fatalf("the next command made %d connections and %d commands in all, want the 2 and 2 already made", a, c)
	}
	if starts.Load() != 1 || host.restarts.Load() != 2 {
		t.Fatalf("%d starts and %d restarts, want 1 and 2", starts.Load(), host.restarts.Load())
	}
}

// A handed-over host the keeper already holds is not dialed again.
func TestHandingOverAHostTheKeeperHoldsDialsNothing(t *testing.T) {
	f := newFixture(t)
	k := startKeeper(t, Config{})
	kc := &Client{Socket: k.socket}
	target := f.srv.Target("web1")
	if _, _, err := kc.Run(context.Background(), target, f.dialer(), []string{"version"}, nil); err != nil {
		t.Fatal(err)
	}
	kc.Adopt(context.Background(), f.dialer(), sshclient.DefaultRemoteProgram, []registry.Target{target})
	// a call after the hand-over is served in order behind it: still one connection
	if _, _, err := kc.Run(context.Background(), target, f.dialer(), []string{"version"}, nil); err != nil {
		t.Fatal(err)
	}
	if n := f.srv.Accepted.Load(); n != 1 {
		t.Fatalf("%d connections, want the one kept", n)
	}
}

// A keeper socket in a directory others may write is handed no hosts: the
// hand-over holds the socket to Run's checks and never connects to it.
func TestAnUntrustedKeeperSocketIsHandedNoHosts(t *testing.T) {
	f := newFixture(t)
	target := f.srv.Target("web1")
	dir, err := os.MkdirTemp("", "stado-keeper")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, "keeper.sock"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	(&Client{Socket: filepath.Join(dir, "keeper.sock")}).Adopt(context.Background(), f.dialer(), sshclient.DefaultRemoteProgram, []registry.Target{target})
	_ = ln.SetDeadline(time.Now().Add(50 * time.Millisecond))
	if c, err := ln.Accept(); err == nil {
		c.Close()
		t.Fatal("the hand-over connected to a keeper socket in a directory others may write")
	}
}
