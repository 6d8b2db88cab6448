package sshclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
)

// DefaultRemoteProgram is the path Call names the remote program by. Under
// a forced command it is ignored (the grammar drops it); without one, the
// login shell runs it.
const DefaultRemoteProgram = "/usr/local/bin/stado"

// Bounds of what one call reads back.
const (
	MaxOutputBytes = 64 << 20 // stdout or stderr of one call
	stderrTailMax  = 4 << 10  // bytes of stderr kept in a RemoteError
	stderrTailRows = 20       // lines of stderr kept in a RemoteError
)

// Pool holds one SSH connection per host for the life of one command: every
// call to the same target reuses it, and concurrent first calls share one
// dial. A connection that drops, or a dial that fails, is forgotten, so the
// next call dials again. A Pool is safe for concurrent use; Close it when the
// command ends.
type Pool struct {
	Dialer *Dialer
	// RemoteProgram is what Call puts before "host channel VERB ...";
	// default DefaultRemoteProgram.
	RemoteProgram string
	// Transport, when set, carries every Run first (the per-user keeper of
	// channel/keeper, over a connection kept between commands); a call it
	// does not carry (ErrNotCarried) goes over the pool's own connection.
	Transport Transport

	mu     sync.Mutex
	conns  map[string]*poolConn
	direct map[string]registry.Target // hosts the Transport declined, dialed by the pool itself
	closed bool
}

// Transport runs commands on hosts over connections a Pool does not hold.
// The pool knows nothing of how: it hands over the call and takes back what
// Pool.Run returns for it.
type Transport interface {
	// Run does what Pool.Run does — runs argv on t with stdin (nil for
	// none) and returns what it printed, with Pool.Run's errors for the
	// same ends — over a connection dialed with d's settings. An error
	// wrapping ErrNotCarried means nothing ran on the host and the pool
	// may run the call itself. Run must be safe for concurrent use.
	Run(ctx context.Context, t registry.Target, d *Dialer, argv []string, stdin []byte) (stdout, stderr []byte, err error)
}

// Adopter is a Transport that can keep, for the commands that follow, the
// hosts a Pool had to dial itself because the Transport did not carry
// their calls (the per-user keeper, started behind a command that found
// none). Pool.Close hands it those hosts.
type Adopter interface {
	// Adopt takes over targets, reached with d's settings and served by
	// program (the pool's RemoteProgram): it connects to them, or has them
	// connected, for the next command. It is best effort and returns
	// promptly; nothing it does changes what the pool's calls returned.
	Adopt(ctx context.Context, d *Dialer, program string, targets []registry.Target)
}

// adoptTimeout bounds Pool.Close's hand-over to an Adopter.
const adoptTimeout = time.Second

// ErrNotCarried is wrapped by a Transport's error when it did not take the
// call and nothing ran on the host: the Pool dials the host itself.
var ErrNotCarried = errors.New("channel: the transport did not carry the call")

type poolConn struct {
	ready  chan struct{}
	client *ssh.Client
	err    error
}

// NewPool returns a Pool dialing with d.
func NewPool(d *Dialer) *Pool { return &Pool{Dialer: d} }

// ErrPoolClosed is returned by calls on a closed Pool.
var ErrPoolClosed = errors.New("channel: pool closed")

// Client returns the pool's connection to t, dialing it on first use.
// Callers arriving while the dial is in flight wait for it and share its
// outcome (the dial runs under the first caller's ctx). Errors are those of
// Dialer.Dial, or ErrPoolClosed.
func (p *Pool) Client(ctx context.Context, t registry.Target) (*ssh.Client, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrPoolClosed
	}
	if p.conns == nil {
		p.conns = map[string]*poolConn{}
	}
	pc, ok := p.conns[t.Name]
	if !ok {
		pc = &poolConn{ready: make(chan struct{})}
		p.conns[t.Name] = pc
		p.mu.Unlock()
		p.dial(ctx, t, pc)
	} else {
		p.mu.Unlock()
	}
	select {
	case <-pc.ready:
	case <-ctx.Done():
		return nil, &channel.RemoteError{Host: t.Name, Stage: channel.StageConnect, Err: ctx.Err()}
	}
	return pc.client, pc.err
}

func (p *Pool) dial(ctx context.Context, t registry.Target, pc *poolConn) {
	d := p.Dialer
	if d == nil {
		d = &Dialer{}
	}
	pc.client, pc.err = d.Dial(ctx, t)
	forget := func() {
		p.mu.Lock()
		if p.conns[t.Name] == pc {
			delete(p.conns, t.Name)
		}
		p.mu.Unlock()
	}
	if pc.err != nil {
		forget()
	} else {
		go func() { _ = pc.client.Wait(); forget() }()
		p.mu.Lock()
		if p.closed { // closed while dialing
			pc.client.Close()
		}
		p.mu.Unlock()
	}
	close(pc.ready)
}

// Close closes every connection. Calls after Close fail with ErrPoolClosed.
// When the Transport is an Adopter, the hosts the pool dialed itself for
// calls the Transport declined, and reached, are handed to it first
// (bounded by adoptTimeout), so the next command finds them connected.
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	conns := p.conns
	p.conns = nil
	var reached []registry.Target
	for name, t := range p.direct {
		if pc, ok := conns[name]; ok && isReady(pc) && pc.client != nil {
			reached = append(reached, t)
		}
	}
	p.direct = nil
	p.mu.Unlock()
	if a, ok := p.Transport.(Adopter); ok && len(reached) > 0 {
		d := p.Dialer
		if d == nil {
			d = &Dialer{}
		}
		prog := p.RemoteProgram
		if prog == "" {
			prog = DefaultRemoteProgram
		}
		slices.SortFunc(reached, func(a, b registry.Target) int { return strings.Compare(a.Name, b.Name) })
		ctx, cancel := context.WithTimeout(context.Background(), adoptTimeout)
		a.Adopt(ctx, d, prog, reached)
		cancel()
	}
	for _, pc := range conns {
		select {
		case <-pc.ready:
			if pc.client != nil {
				pc.client.Close()
			}
		default: // dial in flight: it closes its own client on seeing closed
		}
	}
	return nil
}

func isReady(pc *poolConn) bool {
	select {
	case <-pc.ready:
		return true
	default:
		return false
	}
}

// Run runs argv on t with stdin (nil for none) over the pool's connection
// and returns what it printed. argv is sent as one line of individually
// quoted words (Quote); a word Quote cannot carry is refused before anything
// is sent. A nonzero exit is a *RemoteError at StageRemoteRefusal when stdout
// is the channel's refusal document, at StageRemoteExit otherwise, with the
// tail of stderr; stdout and stderr are returned with it.
func (p *Pool) Run(ctx context.Context, t registry.Target, argv []string, stdin []byte) (stdout, stderr []byte, err error) {
	if p.Transport != nil {
		d := p.Dialer
		if d == nil {
			d = &Dialer{}
		}
		stdout, stderr, err = p.Transport.Run(ctx, t, d, argv, stdin)
		if !errors.Is(err, ErrNotCarried) {
			return stdout, stderr, err
		}
		p.mu.Lock()
		if p.direct == nil {
			p.direct = map[string]registry.Target{}
		}
		p.direct[t.Name] = t
		p.mu.Unlock()
	}
	var in io.Reader
	if stdin != nil {
		in = bytes.NewReader(stdin)
	}
	return p.exec(ctx, t, argv, in)
}

// Exec runs argv on t over the pool's own connection — never through the
// Transport — with stdin streamed from r (nil for none), and returns what
// it printed. It is the raw end of a command on the host's login shell: the
// words are quoted as Run quotes them (a word Quote cannot carry is refused
// before anything is sent), the host key is checked as for every dial, and
// its errors are Run's. `stado host bootstrap` runs its steps with it on a
// host that has no stado yet.
func (p *Pool) Exec(ctx context.Context, t registry.Target, argv []string, stdin io.Reader) (stdout, stderr []byte, err error) {
	return p.exec(ctx, t, argv, stdin)
}

func (p *Pool) exec(ctx context.Context, t registry.Target, argv []string, stdin io.Reader) (stdout, stderr []byte, err error) {
	line, err := channel.Quote(argv)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", t.Name, err)
	}
	client, err := p.Client(ctx, t)
	if err != nil {
		return nil, nil, err
	}
	addr := client.RemoteAddr().String()
	sess, err := client.NewSession()
	if err != nil {
		return nil, nil, &channel.RemoteError{Host: t.Name, Address: addr, Stage: channel.StageConnect, Err: fmt.Errorf("open session: %w", err)}
	}
	defer sess.Close()
	// The fan-out's slot (channel.ReleaseSlot) goes back once the request is
	// sent: the command line and all of stdin. What follows is the host's
	// work, which costs this end nothing.
	if stdin != nil {
		sess.Stdin = &releaseAtEOF{r: stdin, ctx: ctx}
	}
	var out, errb OutputBuffer
	sess.Stdout, sess.Stderr = &out, &errb
	done := make(chan error, 1)
	go func() {
		err := sess.Start(line)
		if stdin == nil {
			channel.ReleaseSlot(ctx)
		}
		if err == nil {
			err = sess.Wait()
		}
		done <- err
	}()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = sess.Signal(ssh.SIGKILL)
		sess.Close()
		<-done
		return out.Bytes(), errb.Bytes(), &channel.RemoteError{Host: t.Name, Address: addr, Stage: channel.StageRemoteExit, ExitStatus: -1, StderrTail: StderrTail(errb.Bytes()), Err: ctx.Err()}
	}
	x := ExitOf(err)
	x.Over = out.Over() || errb.Over()
	return out.Bytes(), errb.Bytes(), x.Err(t, addr, argv, out.Bytes(), errb.Bytes())
}

// releaseAtEOF reads r and gives back ctx's fan-out slot when r is
// exhausted: the SSH session has then taken every byte of the request.
type releaseAtEOF struct {
	r   io.Reader
	ctx context.Context
}

func (e *releaseAtEOF) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		channel.ReleaseSlot(e.ctx)
	}
	return n, err
}

// Exit is how a command on a host ended, as facts a Transport can carry:
// Err turns them into what Pool.Run returns for the same end.
type Exit struct {
	Status  int    // exit status; -1 when none came
	Signal  string // the signal that ended it
	Missing bool   // it ended with neither status nor signal
	Failed  string // the session failed otherwise (transport)
	Over    bool   // stdout or stderr passed MaxOutputBytes
}

// ExitOf reads the error of ssh.Session.Run.
func ExitOf(err error) Exit {
	var exit *ssh.ExitError
	var missing *ssh.ExitMissingError
	switch {
	case err == nil:
		return Exit{}
	case errors.As(err, &exit):
		return Exit{Status: exit.ExitStatus(), Signal: exit.Signal()}
	case errors.As(err, &missing):
		return Exit{Status: -1, Missing: true}
	default:
		return Exit{Status: -1, Failed: err.Error()}
	}
}

// Err is what Pool.Run returns for a command argv that ended as x on t,
// reached at addr, having printed stdout and stderr: nil for a success, a
// *RemoteError otherwise — at StageRemoteRefusal when stdout is the
// channel's refusal document of an exit 3, at StageRemoteExit for another
// nonzero exit or signal, at StageConnect when the session failed or the
// output passed MaxOutputBytes.
func (x Exit) Err(t registry.Target, addr string, argv []string, stdout, stderr []byte) error {
	failed := x.Failed
	if failed == "" && x.Status == 0 && x.Signal == "" && !x.Missing {
		if !x.Over {
			return nil
		}
		failed = fmt.Sprintf("output exceeds %d bytes", MaxOutputBytes)
	}
	re := &channel.RemoteError{Host: t.Name, Address: addr, Stage: channel.StageRemoteExit, ExitStatus: -1, StderrTail: StderrTail(stderr)}
	switch {
	case failed != "":
		re.Stage, re.Err = channel.StageConnect, errors.New(failed)
	case x.Missing:
		re.Err = fmt.Errorf("%s ended without an exit status", argv[0])
	default:
		re.ExitStatus = x.Status
		re.Err = fmt.Errorf("%s exited %d", argv[0], re.ExitStatus)
		if x.Signal != "" {
			re.Err = fmt.Errorf("%s killed by signal %s", argv[0], x.Signal)
		}
		if re.ExitStatus == channel.ExitRefused {
			if r, caps, ok := refusalIn(t.Name, stdout); ok {
				re.Stage, re.Err, re.Capabilities = channel.StageRemoteRefusal, r, caps
			}
		}
	}
	return re
}

// refusalIn reads the refusal document in stdout, with the capabilities it
// advertised.
func refusalIn(host string, stdout []byte) (*channel.Refusal, []channel.Capability, bool) {
	var doc channel.RefusalDocument
	if json.Unmarshal(bytes.TrimSpace(stdout), &doc) != nil || doc.Kind != channel.KindRefusal || doc.Code == "" {
		return nil, nil, false
	}
	if doc.Protocol != channel.ProtocolVersion && doc.Code == string(channel.CodeUnknownVerb) {
		return protocolMismatch(host, doc.Protocol), doc.Capabilities, true
	}
	return &channel.Refusal{Code: refusal.Code(doc.Code), Message: doc.Message}, doc.Capabilities, true
}

// protocolMismatch is the refusal of a host whose stado speaks another
// channel protocol than this one.
func protocolMismatch(host string, theirs int) *channel.Refusal {
	return &channel.Refusal{Code: refusal.ProtocolMismatch,
		Message: fmt.Sprintf("the stado on %s speaks channel protocol %d and this one %d", host, theirs, channel.ProtocolVersion),
		Hint:    "install the same stado on the host (stado service ensure stado --host " + host + ")"}
}

// Call runs cmd through the remote program on t and returns the result the
// host action produced. cmd is validated locally first (a *Refusal, nothing
// sent). A remote refusal is a *RemoteError at StageRemoteRefusal wrapping a
// *Refusal with the remote code; a failed host action one at StageRemoteExit
// carrying the remote error message.
func (p *Pool) Call(ctx context.Context, t registry.Target, cmd channel.Command, stdin []byte) (json.RawMessage, error) {
	argv := cmd.Argv()
	if _, err := channel.ParseArgv(argv); err != nil {
		return nil, fmt.Errorf("%s: %w", t.Name, err)
	}
	prog := p.RemoteProgram
	if prog == "" {
		prog = DefaultRemoteProgram
	}
	stdout, _, err := p.Run(ctx, t, append([]string{prog, "host", "channel"}, argv...), stdin)
	var re *channel.RemoteError
	if errors.As(err, &re) && re.Stage == channel.StageRemoteExit {
		var doc channel.ErrorDocument
		if json.Unmarshal(bytes.TrimSpace(stdout), &doc) == nil && doc.Kind == channel.KindError {
			re.Err = errors.New(doc.Message)
		}
	}
	if err != nil {
		return nil, err
	}
	var doc channel.ResultDocument
	if err := json.Unmarshal(bytes.TrimSpace(stdout), &doc); err != nil || doc.Kind != channel.KindResult || doc.Verb != cmd.Verb {
		return nil, &channel.RemoteError{Host: t.Name, Stage: channel.StageRemoteExit, Err: fmt.Errorf("%s printed no %s result document for %s", prog, channel.KindResult, cmd.Verb)}
	}
	if doc.Protocol != channel.ProtocolVersion {
		return nil, &channel.RemoteError{Host: t.Name, Stage: channel.StageRemoteRefusal, Err: protocolMismatch(t.Name, doc.Protocol)}
	}
	return doc.Result, nil
}

// OutputBuffer keeps at most MaxOutputBytes of what a command printed and
// notes that more came (Over).
type OutputBuffer struct {
	bytes.Buffer
	over bool
}

func (b *OutputBuffer) Write(p []byte) (int, error) {
	if room := MaxOutputBytes - b.Len(); len(p) > room {
		b.over = true
		b.Buffer.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

// Over reports whether more than MaxOutputBytes were written.
func (b *OutputBuffer) Over() bool { return b.over }

// StderrTail is the part of a command's stderr a RemoteError keeps: its
// last lines, bounded in rows and bytes.
func StderrTail(b []byte) string {
	s := strings.TrimRight(string(b), "\n")
	if len(s) > stderrTailMax {
		s = s[len(s)-stderrTailMax:]
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
	}
	lines := strings.Split(s, "\n")
	if len(lines) > stderrTailRows {
		lines = lines[len(lines)-stderrTailRows:]
	}
	return strings.Join(lines, "\n")
}
