package keeper

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/channel/sshclient"
)

// DefaultIdle is how long a keeper waits with no call before it exits.
const DefaultIdle = 60 * time.Second

// requestTimeout bounds reading one call's request and stdin.
const requestTimeout = 30 * time.Second

// ErrRunning is returned by Serve when another keeper already
// serves the socket.
var ErrRunning = errors.New("channel: a keeper already serves this socket")

// Config configures Serve. The zero value is usable.
type Config struct {
	// Socket is the unix socket to listen on; default DefaultSocket().
	Socket string
	// Idle is how long the keeper runs with no call in flight and none
	// arriving before it exits; default DefaultIdle.
	Idle time.Duration
	// Logger receives connection events (host, address, stage; never
	// commands, input or output). Nil discards them.
	Logger *slog.Logger
	// SessionStart bounds the wait for a host's remote program to open a
	// session (sshclient.StartSession); a host that does not in time is
	// called one execution per call. Default sshclient.DefaultSessionStart;
	// negative never opens sessions.
	SessionStart time.Duration
}

// Serve keeps SSH connections between stado invocations, as OpenSSH's
// ControlPersist does: it listens on cfg.Socket, answers calls from
// Clients of its own uid only (checked with the socket's peer
// credentials), and runs each call's command over one connection per
// endpoint and identity (see keptKey), dialing it on first use. Before each
// reuse the host key the connection was established with is checked
// against the current known_hosts by the rules of a new connection, so an
// edit there takes effect at once; a refused key closes the connection and
// fails the call with the *sshclient.HostKeyError the dialer returns.
//
// The socket's directory is created 0700; an existing one must pass the
// Client's checks (the user's, writable by no one else, under a parent
// only the user or root controls), or Serve returns an error wrapping
// ErrUntrusted. The socket is 0600 before it has its name, and a sidecar
// ".lock" file held for the keeper's life makes it the socket's only
// server. Serve returns nil when it has been idle for cfg.Idle or ctx
// ends (in-flight commands are then killed), having removed its socket and
// closed every connection; ErrRunning when another keeper serves the
// socket; other errors when it cannot listen.
func Serve(ctx context.Context, cfg Config) error {
	sock := cfg.Socket
	if sock == "" {
		var err error
		if sock, err = DefaultSocket(); err != nil {
			return err
		}
	}
	idle := cfg.Idle
	if idle <= 0 {
		idle = DefaultIdle
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := socketDir(filepath.Dir(sock)); err != nil {
		return err
	}
	unlock, err := lockSocket(ctx, sock)
	if err != nil {
		return err
	}
	defer unlock()
	if st, err := os.Lstat(sock); err == nil {
		if st.Mode().Type() != fs.ModeSocket {
			return fmt.Errorf("keeper socket %s exists and is not a socket", sock)
		}
		if err := os.Remove(sock); err != nil { // a dead keeper's: we hold the lock
			return fmt.Errorf("remove stale keeper socket: %w", err)
		}
	}
	ln, err := listenPrivate(sock)
	if err != nil {
		return err
	}

	kctx, cancel := context.WithCancel(ctx)
	defer cancel()
	k := &keeper{ctx: kctx, idle: idle, log: log, self: os.Geteuid(), conns: map[keptKey]*keptConn{}, stop: make(chan struct{}), sessionStart: cfg.SessionStart}
	if k.sessionStart == 0 {
		k.sessionStart = sshclient.DefaultSessionStart
	}
	k.mu.Lock()
	k.armIdle()
	k.mu.Unlock()
	log.Info("keeper listening", "socket", sock, "idle", idle)

	acceptDone := make(chan struct{})
	go func() {
		defer close(acceptDone)
		for {
			conn, err := ln.AcceptUnix()
			if err != nil {
				if !errors.Is(err, net.ErrClosed) {
					log.Error("keeper accept", "err", err)
					k.shutdown()
				}
				return
			}
			k.begin(conn)
		}
	}()
	select {
	case <-ctx.Done():
	case <-k.stop:
	}
	k.mu.Lock()
	k.closing = true
	k.mu.Unlock()
	ln.Close()
	_ = os.Remove(sock) // ours: we hold the lock
	<-acceptDone
	unlock() // a new keeper may start while this one finishes its calls
	k.calls.Wait()
	k.closeAll()
	log.Info("keeper stopped", "socket", sock)
	return nil
}

// listenSeq tells apart the temporary names of keepers listening in one
// process (tests run several).
var listenSeq atomic.Uint64

// listenPrivate listens on sock with the socket file 0600 from the moment
// it has that name: it binds a temporary name in the same directory,
// narrows its mode and renames it to sock, so no client ever finds the
// socket under its name with the mode bind left (the umask's). The
// listener does not remove sock on close; Serve does, holding the lock.
func listenPrivate(sock string) (*net.UnixListener, error) {
	tmp := filepath.Join(filepath.Dir(sock), "."+strconv.Itoa(os.Getpid())+"-"+strconv.FormatUint(listenSeq.Add(1), 10))
	_ = os.Remove(tmp) // a dead keeper's of the same pid
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("keeper: %w", err)
	}
	ln.SetUnlinkOnClose(false)
	err = os.Chmod(tmp, 0o600)
	if err == nil {
		err = os.Rename(tmp, sock)
	}
	if err != nil {
		ln.Close()
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("keeper: %w", err)
	}
	return ln, nil
}

// DefaultSocket is $XDG_RUNTIME_DIR/stado/keeper.sock, or
// $HOME/.stado/run/keeper.sock when XDG_RUNTIME_DIR is not set.
func DefaultSocket() (string, error) {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "stado", "keeper.sock"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("keeper socket: %w", err)
	}
	return filepath.Join(home, ".stado", "run", "keeper.sock"), nil
}

// socketDir makes dir 0700 (with any missing parents), or checks an
// existing one: it must pass checkSocketDir for the keeper's uid, as the
// Client checks it, so a keeper never listens where its clients would not
// trust it. Errors wrap ErrUntrusted when the directory is not the user's
// alone.
func socketDir(dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return fmt.Errorf("keeper socket directory: %w", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("keeper socket directory: %w", err)
	}
	return checkSocketDir(dir, os.Geteuid())
}

// lockSocket takes the socket's sidecar lock. While another keeper holds it
// and answers on the socket, that keeper serves: ErrRunning. A holder
// that does not answer is finishing its last calls after closing its
// socket; the lock is waited for, briefly.
func lockSocket(ctx context.Context, sock string) (func(), error) {
	f, err := os.OpenFile(sock+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("keeper lock: %w", err)
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	giveUp := time.NewTimer(5 * time.Second)
	defer giveUp.Stop()
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			var once sync.Once
			return func() {
				once.Do(func() {
					_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
					f.Close()
				})
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("keeper lock: %w", err)
		}
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			f.Close()
			return nil, ErrRunning
		}
		select {
		case <-tick.C:
		case <-giveUp.C:
			f.Close()
			return nil, ErrRunning
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		}
	}
}

// keeper is one Serve's state.
type keeper struct {
	ctx  context.Context // ends when the keeper stops
	idle time.Duration
	log  *slog.Logger
	self int // the keeper's euid: the only uid served

	sessionStart time.Duration // see Config.SessionStart

	calls sync.WaitGroup // connections being served

	mu       sync.Mutex
	active   int    // connections being served
	idleGen  uint64 // bumped each time active drops to 0
	closing  bool
	stopping bool
	stop     chan struct{} // closed to stop
	conns    map[keptKey]*keptConn
}

// keptConn is one kept connection; ready is closed once its dial ended.
type keptConn struct {
	ready    chan struct{}
	client   *ssh.Client
	seen     *sshclient.HostKeySeen
	err      error
	sessions sessions // remote programs kept running to serve channel calls
}

// armIdle starts the idle period; k.mu is held.
func (k *keeper) armIdle() {
	k.idleGen++
	gen := k.idleGen
	time.AfterFunc(k.idle, func() {
		k.mu.Lock()
		stale := k.active > 0 || k.idleGen != gen
		k.mu.Unlock()
		if !stale {
			k.log.Info("keeper idle", "after", k.idle)
			k.shutdown()
		}
	})
}

// shutdown makes Serve stop.
func (k *keeper) shutdown() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.stopping {
		k.stopping = true
		close(k.stop)
	}
}

// begin serves one accepted connection.
func (k *keeper) begin(conn *net.UnixConn) {
	k.mu.Lock()
	if k.closing {
		k.mu.Unlock()
		_ = writeFrame(conn, &keeperFrame{Kind: frameUnavailable, Version: keeperProtocol, Reason: "keeper is stopping", Retry: true})
		conn.Close()
		return
	}
	k.active++
	k.calls.Add(1)
	k.mu.Unlock()
	go func() {
		defer func() {
			k.mu.Lock()
			if k.active--; k.active == 0 {
				k.armIdle()
			}
			k.mu.Unlock()
			k.calls.Done()
		}()
		defer conn.Close()
		k.serve(conn)
	}()
}

// serve answers one call on conn.
func (k *keeper) serve(conn *net.UnixConn) {
	unavailable := func(format string, args ...any) {
		_ = writeFrame(conn, &keeperFrame{Kind: frameUnavailable, Version: keeperProtocol, Reason: fmt.Sprintf(format, args...)})
	}
	uid, err := peerUID(conn)
	if err == nil {
		err = checkPeer(uid, k.self)
	}
	if err != nil {
		k.log.Warn("keeper refused a peer", "err", err)
		unavailable("%v", err)
		return
	}
	_ = conn.SetReadDeadline(time.Now().Add(requestTimeout))
	r := bufio.NewReader(conn)
	var f keeperFrame
	if err := readFrame(r, &f); err != nil || (f.Kind != frameRequest || f.Request == nil) && f.Kind != frameAdopt {
		unavailable("no request")
		return
	}
	if f.Version != keeperProtocol {
		unavailable("keeper speaks protocol %d, the client %d", keeperProtocol, f.Version)
		if f.Version > keeperProtocol { // a newer stado: make way for its keeper
			k.log.Info("keeper retiring for a newer client", "protocol", f.Version)
			k.shutdown()
		}
		return
	}
	if f.Kind == frameAdopt {
		k.adopt(conn, f.Program, f.Adopt)
		return
	}
	req := f.Request
	if err := req.validate(); err != nil {
		unavailable("invalid request: %v", err)
		return
	}
	var stdin []byte
	for {
		if err := readFrame(r, &f); err != nil {
			unavailable("read stdin: %v", err)
			return
		}
		if f.Kind == frameStdinEnd {
			break
		}
		if f.Kind != frameStdin || !req.Stdin || len(stdin)+len(f.Data) > maxKeeperStdin {
			unavailable("unexpected %s frame", f.Kind)
			return
		}
		stdin = append(stdin, f.Data...)
	}
	if req.Stdin && stdin == nil {
		stdin = []byte{}
	}
	_ = conn.SetReadDeadline(time.Time{})

	// The client closing its end cancels the call.
	ctx, cancel := context.WithCancel(k.ctx)
	defer cancel()
	go func() {
		_, _ = r.ReadByte()
		cancel()
	}()
	w := &frameWriter{w: conn}
	if fail := k.run(ctx, req, stdin, w); fail != nil {
		_ = w.frame(&keeperFrame{Kind: frameFailed, Failure: failureOf(fail)})
	}
}

// adoptParallel bounds the dials of one adopt call.
const adoptParallel = 16

// adoptHold bounds how long an adopt call's client holds its connection
// open after the keeper took the hosts, and the keeper waits for it to
// close before dialing them.
const adoptHold = 2 * time.Second

// adopt takes the hosts a client dialed itself: once every request passes
// validateEndpoint it answers "adopted", then connects to each host it does
// not hold (acquire) and opens its channel session running program, as the
// first call to it would, at most adoptParallel at once. The dials run under
// the keeper's context and hold it from its idle exit until they end.
func (k *keeper) adopt(conn *net.UnixConn, program string, reqs []*keeperRequest) {
	if len(reqs) > maxAdoptBatch {
		_ = writeFrame(conn, &keeperFrame{Kind: frameUnavailable, Version: keeperProtocol, Reason: fmt.Sprintf("%d hosts exceed %d", len(reqs), maxAdoptBatch)})
		return
	}
	if program != "" {
		if _, err := channel.Quote([]string{program}); err != nil {
			_ = writeFrame(conn, &keeperFrame{Kind: frameUnavailable, Version: keeperProtocol, Reason: fmt.Sprintf("invalid program: %v", err)})
			return
		}
	}
	for _, req := range reqs {
		if req == nil {
			_ = writeFrame(conn, &keeperFrame{Kind: frameUnavailable, Version: keeperProtocol, Reason: "invalid request: empty"})
			return
		}
		if err := req.validateEndpoint(); err != nil {
			_ = writeFrame(conn, &keeperFrame{Kind: frameUnavailable, Version: keeperProtocol, Reason: fmt.Sprintf("invalid request: %v", err)})
			return
		}
	}
	if writeFrame(conn, &keeperFrame{Kind: frameAdopted, Version: keeperProtocol}) != nil {
		return
	}
	// The client holds the connection until its process exits (at most
	// adoptHold): the dials start once the command that handed the hosts
	// over is gone, not while it is still finishing on the same cores.
	_ = conn.SetReadDeadline(time.Now().Add(adoptHold))
	stop := context.AfterFunc(k.ctx, func() { conn.Close() }) // a stopping keeper does not wait
	_, _ = io.Copy(io.Discard, conn)
	stop()
	conn.Close()
	k.log.Info("keeper adopting hosts", "hosts", len(reqs))
	slots := make(chan struct{}, adoptParallel)
	var wg sync.WaitGroup
	for _, req := range reqs {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			kc, fresh, err := k.acquire(k.ctx, req.key(), req.dialer(), req.Endpoint.endpoint())
			if err != nil || !fresh || program == "" || k.sessionStart <= 0 {
				return
			}
			kc.sessions.warm(k.ctx, kc.client, program, k.sessionStart)
		}()
	}
	wg.Wait()
}

// run runs req over its kept connection, streaming to w. A non-nil error is
// a *channel.RemoteError raised before the session opened.
func (k *keeper) run(ctx context.Context, req *keeperRequest, stdin []byte, w *frameWriter) error {
	ep := req.Endpoint.endpoint()
	d := req.dialer()
	key := req.key()
	var sess *ssh.Session
	var addr string
	for attempt := 0; ; attempt++ {
		kc, fresh, err := k.acquire(ctx, key, d, ep)
		if err != nil {
			return err
		}
		if !fresh {
			redial, err := d.Recheck(ep, kc.seen)
			if err != nil || redial {
				k.retire(key, kc, "host key no longer accepted")
			}
			if err != nil {
				return &channel.RemoteError{Host: ep.Host, Address: ep.HostPort(), Stage: channel.StageHostKey, Err: err}
			}
			if redial {
				continue
			}
		}
		addr = kc.client.RemoteAddr().String()
		if prog, call, ok := channelCall(req.Argv); ok && k.sessionStart > 0 {
			// A channel call rides a session when the host serves them;
			// otherwise (an older stado, a session that would not start)
			// it is one execution, as below.
			if rs, err := kc.sessions.take(ctx, kc.client, prog, k.sessionStart); err == nil {
				return callSession(ctx, kc, rs, addr, call, stdin, w)
			}
			if ctx.Err() != nil {
				return nil // the client is gone, or the keeper stops
			}
		}
		sess, err = kc.client.NewSession()
		if err == nil {
			break
		}
		k.retire(key, kc, "session refused")
		if fresh || attempt > 0 { // a kept connection may have died unnoticed: dial once more
			return &channel.RemoteError{Host: ep.Host, Address: addr, Stage: channel.StageConnect, Err: fmt.Errorf("open session: %w", err)}
		}
	}
	defer sess.Close()
	if err := w.frame(&keeperFrame{Kind: frameStarted, Address: addr}); err != nil {
		return nil // the client is gone; nothing ran
	}
	line, _ := channel.Quote(req.Argv) // validated
	if stdin != nil {
		sess.Stdin = bytes.NewReader(stdin)
	}
	out, errb := &streamWriter{fw: w, kind: frameStdout}, &streamWriter{fw: w, kind: frameStderr}
	sess.Stdout, sess.Stderr = out, errb
	done := make(chan error, 1)
	go func() { done <- sess.Run(line) }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = sess.Signal(ssh.SIGKILL)
		sess.Close()
		<-done
		return nil // the client is gone, or the keeper stops
	}
	x := wireExit(sshclient.ExitOf(err))
	x.Over = out.over || errb.over
	_ = w.frame(&keeperFrame{Kind: frameExit, Exit: x})
	return nil
}

// callSession runs one channel call in rs and streams its answer to w as an
// execution's would be.
func callSession(ctx context.Context, kc *keptConn, rs *sshclient.RemoteSession, addr string, call []string, stdin []byte, w *frameWriter) error {
	if err := w.frame(&keeperFrame{Kind: frameStarted, Address: addr}); err != nil {
		kc.sessions.put(rs)
		return nil // the client is gone; nothing ran
	}
	resp, err := rs.Call(ctx, call, stdin)
	if err != nil {
		if ctx.Err() == nil {
			_ = w.frame(&keeperFrame{Kind: frameExit, Exit: &keeperExit{Status: -1, Failed: err.Error()}})
		}
		return nil
	}
	kc.sessions.put(rs)
	out, errb := &streamWriter{fw: w, kind: frameStdout}, &streamWriter{fw: w, kind: frameStderr}
	_, _ = out.Write(resp.Stdout)
	_, _ = errb.Write(resp.Stderr)
	x := &keeperExit{Status: resp.Exit, Over: out.over || errb.over}
	_ = w.frame(&keeperFrame{Kind: frameExit, Exit: x})
	return nil
}

// acquire returns the kept connection for key, dialing it when there is
// none; fresh says it was dialed for this call. Calls arriving during a dial
// share it. The dial runs under the keeper's context, bounded by the
// connect timeout; ctx bounds only the wait.
func (k *keeper) acquire(ctx context.Context, key keptKey, d *sshclient.Dialer, ep sshclient.Endpoint) (*keptConn, bool, error) {
	k.mu.Lock()
	kc, ok := k.conns[key]
	if !ok {
		kc = &keptConn{ready: make(chan struct{})}
		k.conns[key] = kc
	}
	k.mu.Unlock()
	if !ok {
		kc.client, kc.seen, kc.err = d.DialEndpoint(k.ctx, ep)
		if kc.err != nil {
			k.forget(key, kc)
			k.log.Info("keeper dial failed", "host", ep.Host, "address", ep.HostPort(), "err", kc.err)
		} else {
			k.log.Info("keeper connected", "host", ep.Host, "address", ep.HostPort())
			go func() {
				_ = kc.client.Wait()
				k.forget(key, kc)
			}()
		}
		close(kc.ready)
		return kc, true, kc.err
	}
	select {
	case <-kc.ready:
	case <-ctx.Done():
		return nil, false, &channel.RemoteError{Host: ep.Host, Stage: channel.StageConnect, Err: ctx.Err()}
	}
	if kc.err != nil { // the dial this call waited for failed
		return nil, false, kc.err
	}
	return kc, false, nil
}

// forget drops kc from the kept connections if it is still there.
func (k *keeper) forget(key keptKey, kc *keptConn) {
	k.mu.Lock()
	if k.conns[key] == kc {
		delete(k.conns, key)
	}
	k.mu.Unlock()
}

// retire forgets kc and closes it.
func (k *keeper) retire(key keptKey, kc *keptConn, why string) {
	k.forget(key, kc)
	kc.client.Close()
	k.log.Info("keeper closed a connection", "host", key.host, "reason", why)
}

// closeAll closes every kept connection; no call is in flight.
func (k *keeper) closeAll() {
	k.mu.Lock()
	conns := k.conns
	k.conns = map[keptKey]*keptConn{}
	k.mu.Unlock()
	for _, kc := range conns {
		<-kc.ready
		if kc.client != nil {
			kc.client.Close()
		}
	}
}

// checkPeer admits only the keeper's own uid.
func checkPeer(uid, self int) error {
	if uid != self {
		return fmt.Errorf("peer uid %d is not the keeper's uid %d", uid, self)
	}
	return nil
}

// frameWriter serialises frames from the session's output goroutines.
type frameWriter struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

func (w *frameWriter) frame(f *keeperFrame) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = writeFrame(w.w, f)
	}
	return w.err
}

// streamWriter sends a session's stdout or stderr as frames, up to
// sshclient.MaxOutputBytes, and notes that more came.
type streamWriter struct {
	fw   *frameWriter
	kind string
	n    int
	over bool
}

func (s *streamWriter) Write(p []byte) (int, error) {
	b := p
	if room := sshclient.MaxOutputBytes - s.n; len(b) > room {
		s.over = true
		b = b[:max(room, 0)]
	}
	s.n += len(b)
	for len(b) > 0 {
		c := b[:min(len(b), keeperChunk)]
		b = b[len(c):]
		if err := s.fw.frame(&keeperFrame{Kind: s.kind, Data: c}); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}
