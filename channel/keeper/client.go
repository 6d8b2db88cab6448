package keeper

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/channel/sshclient"
	"github.com/wisent/stado/registry"
)

// ErrUnavailable is returned (wrapped, with the reason) by Client.Run when
// the call did not reach a host through a keeper: nothing listens and none
// could be started, the keeper refused the call (another uid, another
// protocol version, stopping), or the connection to it broke before the
// command started. Nothing ran on the host, so the caller falls back to a
// direct connection: it matches sshclient.ErrNotCarried too, which is what
// sshclient.Pool falls back on.
var ErrUnavailable error = unavailable{}

type unavailable struct{}

func (unavailable) Error() string        { return "channel: keeper unavailable" }
func (unavailable) Is(target error) bool { return target == sshclient.ErrNotCarried }

// DefaultStartTimeout bounds the wait for a keeper a Client started to
// answer on its socket.
const DefaultStartTimeout = 5 * time.Second

// Client runs commands on hosts through the keeper (Serve) listening on
// Socket, so connections outlive one stado command: it is the
// sshclient.Transport an sshclient.Pool takes. It is safe for concurrent use and
// must not be copied after first use.
//
// Before every call the Client checks that the keeper is its own user's:
// the socket's directory is owned by this process's effective uid and not
// writable by its group or others (its parent owned by that uid or root,
// and sticky when others may write it), the socket likewise, and the
// process that answers on it runs as that uid on the kernel's word
// (SO_PEERCRED on linux, LOCAL_PEERCRED on darwin), all before a byte of
// the request is sent. A keeper that fails a check is never sent anything
// nor started anew: the call returns an error wrapping ErrUnavailable and
// ErrUntrusted, so the pool dials the host itself, and the reason is
// logged once per Client (Logger).
type Client struct {
	// Socket is the keeper's socket; default DefaultSocket().
	Socket string
	// Start starts a keeper when nothing answers on Socket (stado's own
	// commands: StartProcess of this executable's `host keeper`; a test:
	// a keeper in its own process); nil never starts one.
	Start func() error
	// StartBehind, with Start, makes a keeper that is not running cost
	// nothing: the Client starts one (once) and does not wait for it, and
	// every call of this Client then returns ErrUnavailable, so its pool
	// dials the hosts itself — a cold command, not a keeper's start and
	// then a cold dial. The next command finds the keeper serving. Without
	// it, the Client waits for the keeper it started (StartTimeout) and
	// calls through it.
	StartBehind bool
	// StartTimeout bounds the wait for a started keeper's socket; default
	// DefaultStartTimeout.
	StartTimeout time.Duration
	// Logger receives one warning, the first time a keeper is not trusted
	// (ErrUntrusted), naming the reason; later calls that fall back for
	// the same or another reason say nothing more. Nil discards it.
	Logger *slog.Logger

	warned   atomic.Bool
	behind   atomic.Bool  // this Client started a keeper without waiting for it
	behindAt atomic.Int64 // when (unix nanoseconds)
}

// adoptStartWait bounds how long after starting a keeper behind its calls
// a Client still waits for its socket to hand it hosts (Adopt): a keeper
// that has not answered by then is not waited for, so a keeper that cannot
// start costs a command at most this, and a command that ran longer
// nothing.
const adoptStartWait = time.Second

// distrust logs err, the first untrusted keeper of c, once.
func (c *Client) distrust(err error) {
	if c.Logger != nil && c.warned.CompareAndSwap(false, true) {
		c.Logger.Warn("keeper not used, dialing hosts directly", "reason", err)
	}
}

var _ sshclient.Transport = (*Client)(nil)

// Run does what sshclient.Pool.Run does — runs argv on t with stdin (nil for none) as
// one quoted line and returns what it printed — over the keeper's
// connection to t, dialed with dialer's settings (nil: the zero Dialer).
// The endpoint is resolved here (ssh_config, defaults under this process's
// $HOME); the keeper gets paths and this process's agent socket, never key
// material.
//
// Errors are sshclient.Pool.Run's: a word channel.Quote cannot carry; a
// *channel.RemoteError at StageConnect, StageAuth or StageHostKey (with the
// dialer's *sshclient.HostKeyError, also when a kept connection's key is no
// longer accepted) when the host was not reached, at StageRemoteRefusal or
// StageRemoteExit when the command failed, with stdout and stderr
// returned. An error wrapping ErrUnavailable means no keeper took the call
// and nothing ran: fall back to sshclient.Pool.Run. It also wraps
// ErrUntrusted when the keeper's socket failed a trust check, in which
// case nothing at all was written to it.
func (c *Client) Run(ctx context.Context, t registry.Target, dialer *sshclient.Dialer, argv []string, stdin []byte) (stdout, stderr []byte, err error) {
	if _, err := channel.Quote(argv); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", t.Name, err)
	}
	if dialer == nil {
		dialer = &sshclient.Dialer{}
	}
	ep, err := dialer.Resolve(t)
	if err != nil {
		return nil, nil, &channel.RemoteError{Host: t.Name, Stage: channel.StageConnect, Err: err}
	}
	req, err := newKeeperRequest(dialer, ep, argv, stdin)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	for attempt := 0; ; attempt++ {
		stdout, stderr, retry, err := c.call(ctx, t, req, stdin)
		if !retry || attempt > 0 {
			return stdout, stderr, err
		}
	}
}

var _ sshclient.Adopter = (*Client)(nil)

// Adopt hands targets, which this process dialed itself with dialer (nil:
// the zero Dialer) because no keeper carried their calls, to the keeper, so
// the commands that follow find them connected and their sessions running
// program: the first command after the keeper's idle exit pays a cold
// dial, not a keeper's start and then a dial, and the next one none. When
// this Client started the keeper (StartBehind), Adopt waits for its socket
// until a second after that start (adoptStartWait) or ctx ends; otherwise
// it hands them only to a keeper already there.
// The keeper is held to the checks of Run before a byte is sent (one that
// fails them is logged once and handed nothing); Adopt waits only for the
// keeper's answer that it took the hosts, never for its dials. It is best
// effort: any failure leaves the next command to dial as this one did.
func (c *Client) Adopt(ctx context.Context, dialer *sshclient.Dialer, program string, targets []registry.Target) {
	if dialer == nil {
		dialer = &sshclient.Dialer{}
	}
	var reqs []*keeperRequest
	for _, t := range targets {
		ep, err := dialer.Resolve(t)
		if err != nil {
			continue
		}
		if req, err := newKeeperRequest(dialer, ep, nil, nil); err == nil {
			reqs = append(reqs, req)
		}
	}
	for len(reqs) > 0 {
		n := min(len(reqs), maxAdoptBatch)
		if !c.adopt(ctx, program, reqs[:n]) {
			return
		}
		reqs = reqs[n:]
	}
}

// adopt sends one adopt call; false when the keeper did not take it.
func (c *Client) adopt(ctx context.Context, program string, reqs []*keeperRequest) bool {
	conn, err := c.connectAdopt(ctx)
	if err != nil {
		if errors.Is(err, ErrUntrusted) {
			c.distrust(err)
		}
		return false
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if err := writeFrame(conn, &keeperFrame{Kind: frameAdopt, Version: keeperProtocol, Program: program, Adopt: reqs}); err != nil {
		conn.Close()
		return false
	}
	var f keeperFrame
	if readFrame(bufio.NewReader(conn), &f) != nil || f.Kind != frameAdopted {
		conn.Close()
		return false
	}
	// The keeper dials once this connection closes: when this process
	// exits, or adoptHold from now, so its dials do not compete with the
	// end of the command that handed the hosts over.
	time.AfterFunc(adoptHold, func() { conn.Close() })
	return true
}

// connectAdopt dials the keeper's socket once it is trusted; when this
// Client started the keeper behind its calls, it polls for the socket until
// adoptStartWait after that start, or ctx ends. It never starts one.
func (c *Client) connectAdopt(ctx context.Context) (*net.UnixConn, error) {
	sock := c.Socket
	if sock == "" {
		var err error
		if sock, err = DefaultSocket(); err != nil {
			return nil, err
		}
	}
	uid := os.Geteuid()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		conn, err := dialTrusted(ctx, sock, uid)
		if err == nil || !c.behind.Load() || !notListening(err) {
			return conn, err
		}
		if time.Since(time.Unix(0, c.behindAt.Load())) > adoptStartWait {
			return nil, fmt.Errorf("the keeper started %v ago does not answer on %s: %w", adoptStartWait, sock, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}

// newKeeperRequest is the request for one call, every path made absolute
// in this process's working directory.
func newKeeperRequest(d *sshclient.Dialer, ep sshclient.Endpoint, argv []string, stdin []byte) (*keeperRequest, error) {
	if len(stdin) > maxKeeperStdin {
		return nil, fmt.Errorf("stdin of %d bytes exceeds %d", len(stdin), maxKeeperStdin)
	}
	abs := func(p string) (string, error) {
		if p == "" {
			return "", nil
		}
		return filepath.Abs(p)
	}
	we := keeperEndpoint{Host: ep.Host, Address: ep.Address, Port: ep.Port, User: ep.User, Explicit: ep.Explicit}
	for _, f := range ep.IdentityFiles {
		a, err := abs(f)
		if err != nil {
			return nil, err
		}
		we.IdentityFiles = append(we.IdentityFiles, a)
	}
	kh, err := abs(d.KnownHostsFile())
	if err != nil {
		return nil, err
	}
	sock := d.AgentSocket
	if sock == "" && !d.NoAgent {
		sock = os.Getenv("SSH_AUTH_SOCK")
	}
	if d.NoAgent {
		sock = ""
	}
	if sock, err = abs(sock); err != nil {
		return nil, err
	}
	return &keeperRequest{
		Endpoint:   we,
		KnownHosts: kh, AcceptNew: d.AcceptNewHostKey,
		AgentSocket: sock, NoAgent: d.NoAgent,
		ConnectTimeout: int64(d.ConnectTimeout), KeepAlive: int64(d.KeepAlive), KeepAliveMissed: d.KeepAliveMissed,
		Argv: argv, Stdin: stdin != nil,
	}, nil
}

// call makes one attempt; retry says the keeper was stopping or closed the
// connection before answering, so one more attempt may start a new keeper.
func (c *Client) call(ctx context.Context, t registry.Target, req *keeperRequest, stdin []byte) (stdout, stderr []byte, retry bool, err error) {
	unavailable := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrUnavailable, fmt.Sprintf(format, args...))
	}
	conn, err := c.connect(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, false, &channel.RemoteError{Host: t.Name, Stage: channel.StageConnect, Err: ctx.Err()}
		}
		if errors.Is(err, ErrUntrusted) {
			c.distrust(err)
			return nil, nil, false, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return nil, nil, false, unavailable("%v", err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()

	// the request, its stdin and the stdin's end go in one write
	msg, werr := appendFrame(nil, &keeperFrame{Kind: frameRequest, Version: keeperProtocol, Request: req})
	for b := stdin; werr == nil && len(b) > 0; {
		n := min(len(b), keeperChunk)
		msg, werr = appendFrame(msg, &keeperFrame{Kind: frameStdin, Data: b[:n]})
		b = b[n:]
	}
	if werr == nil {
		msg, werr = appendFrame(msg, &keeperFrame{Kind: frameStdinEnd})
	}
	if werr == nil {
		_, werr = conn.Write(msg)
	}

	r := bufio.NewReader(conn)
	var out, errb sshclient.OutputBuffer
	addr, started := "", false
	for {
		var f keeperFrame
		if err := readFrame(r, &f); err != nil {
			switch {
			case ctx.Err() != nil && started:
				return out.Bytes(), errb.Bytes(), false, &channel.RemoteError{Host: t.Name, Address: addr, Stage: channel.StageRemoteExit, ExitStatus: -1, StderrTail: sshclient.StderrTail(errb.Bytes()), Err: ctx.Err()}
			case ctx.Err() != nil:
				return nil, nil, false, &channel.RemoteError{Host: t.Name, Stage: channel.StageConnect, Err: ctx.Err()}
			case !started:
				if werr != nil {
					err = werr
				}
				return nil, nil, true, unavailable("keeper closed the call: %v", err)
			default:
				return out.Bytes(), errb.Bytes(), false, &channel.RemoteError{Host: t.Name, Address: addr, Stage: channel.StageConnect, ExitStatus: -1, StderrTail: sshclient.StderrTail(errb.Bytes()), Err: fmt.Errorf("keeper connection lost: %w", err)}
			}
		}
		switch {
		case f.Kind == frameUnavailable && !started:
			return nil, nil, f.Retry, unavailable("%s", f.Reason)
		case f.Kind == frameFailed && !started && f.Failure != nil:
			return nil, nil, false, f.Failure.remoteError(t.Name)
		case f.Kind == frameStarted && !started:
			// the keeper has the connection and the command runs, stdin
			// sent: the rest is the host's, and the fan-out's slot goes back
			started, addr = true, f.Address
			channel.ReleaseSlot(ctx)
		case f.Kind == frameStdout && started:
			_, _ = out.Write(f.Data)
		case f.Kind == frameStderr && started:
			_, _ = errb.Write(f.Data)
		case f.Kind == frameExit && started && f.Exit != nil:
			x := f.Exit.exit()
			x.Over = x.Over || out.Over() || errb.Over()
			return out.Bytes(), errb.Bytes(), false, x.Err(t, addr, req.Argv, out.Bytes(), errb.Bytes())
		case !started:
			return nil, nil, false, unavailable("unexpected %q frame from the keeper", f.Kind)
		default:
			return out.Bytes(), errb.Bytes(), false, &channel.RemoteError{Host: t.Name, Address: addr, Stage: channel.StageConnect, ExitStatus: -1, StderrTail: sshclient.StderrTail(errb.Bytes()), Err: fmt.Errorf("unexpected %q frame from the keeper", f.Kind)}
		}
	}
}

// connect dials the keeper's socket once it is trusted (dialTrusted);
// when nothing listens there and Start is set, it starts a keeper and polls
// for its socket until StartTimeout, or with StartBehind returns at once. A socket or directory that is not
// trusted is never answered by a start: the error wraps ErrUntrusted.
func (c *Client) connect(ctx context.Context) (*net.UnixConn, error) {
	sock := c.Socket
	if sock == "" {
		var err error
		if sock, err = DefaultSocket(); err != nil {
			return nil, err
		}
	}
	if c.behind.Load() {
		return nil, errors.New("a keeper was started for the next command; this one dials its hosts itself")
	}
	uid := os.Geteuid()
	conn, err := dialTrusted(ctx, sock, uid)
	if err == nil || c.Start == nil || !notListening(err) {
		return conn, err
	}
	if c.StartBehind {
		if c.behind.CompareAndSwap(false, true) {
			c.behindAt.Store(time.Now().UnixNano())
			if err := c.Start(); err != nil {
				return nil, fmt.Errorf("start keeper: %w", err)
			}
		}
		return nil, fmt.Errorf("no keeper on %s; one was started for the next command: %w", sock, err)
	}
	if err := c.Start(); err != nil {
		return nil, fmt.Errorf("start keeper: %w", err)
	}
	wait := c.StartTimeout
	if wait <= 0 {
		wait = DefaultStartTimeout
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-deadline.C:
			return nil, fmt.Errorf("started keeper does not answer on %s after %v: %w", sock, wait, err)
		case <-tick.C:
		}
		conn, err = dialTrusted(ctx, sock, uid)
		if err == nil || !notListening(err) {
			return conn, err
		}
	}
}

// notListening says err is a socket (or its directory) that is not there,
// or one nobody serves: a keeper may be started.
func notListening(err error) bool {
	return !errors.Is(err, ErrUntrusted) && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED))
}

// dialTrusted connects to sock when it, its directory and the process
// serving it are uid's (checkSocketDir, checkSocketFile, checkServer), and
// returns the connection with nothing written to it. Errors wrap
// ErrUntrusted when a check failed, fs.ErrNotExist or ECONNREFUSED when
// nothing listens.
func dialTrusted(ctx context.Context, sock string, uid int) (*net.UnixConn, error) {
	if err := checkSocketDir(filepath.Dir(sock), uid); err != nil {
		return nil, err
	}
	if err := checkSocketFile(sock, uid); err != nil {
		return nil, err
	}
	conn, err := dialSocket(ctx, sock)
	if err != nil {
		return nil, err
	}
	if err := checkServer(conn, uid); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

func dialSocket(ctx context.Context, sock string) (*net.UnixConn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		return nil, err
	}
	return c.(*net.UnixConn), nil
}

// StartProcess starts exe with args (typically this executable's
// `host keeper`) as a keeper detached from the caller: a new session, no
// controlling terminal, stdin, stdout and stderr on /dev/null, working
// directory /, and the caller's environment without SSH_AUTH_SOCK (each
// call names the agent its client uses; the keeper has none of its own).
// It returns once the process started, without waiting for its socket
// (Client polls for it), and reaps the process if it exits while the
// caller still runs.
//
// Callers decide whether to start a keeper at all: a process that is not
// stado (a test binary) must not hand its own executable here, since it
// would not serve a keeper; tests inject the start instead (Client.Start).
func StartProcess(exe string, args []string) error {
	if strings.ContainsRune(exe, os.PathSeparator) {
		abs, err := filepath.Abs(exe) // the working directory becomes /
		if err != nil {
			return fmt.Errorf("start keeper: %w", err)
		}
		exe = abs
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("start keeper: %w", err)
	}
	defer null.Close()
	cmd := exec.Command(exe, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = null, null, null
	cmd.Dir = "/"
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "SSH_AUTH_SOCK=") })
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start keeper: %w", err)
	}
	go func() { _ = cmd.Wait() }()
	return nil
}
