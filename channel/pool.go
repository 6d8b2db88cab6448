package channel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
)

// DefaultRemoteProgram is the path Call names the remote program by. Under
// a forced command it is ignored (the grammar drops it); without one, the
// login shell runs it.
const DefaultRemoteProgram = "/usr/local/bin/stado"

// Bounds of what one call reads back.
const (
	maxOutputBytes = 64 << 20 // stdout or stderr of one call
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
	// Keeper, when set, carries every Run over a kept connection (see
	// ServeKeeper); a call no keeper takes falls back to the pool's own
	// connection.
	Keeper *KeeperClient

	mu     sync.Mutex
	conns  map[string]*poolConn
	closed bool
}

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
		return nil, &RemoteError{Host: t.Name, Stage: StageConnect, Err: ctx.Err()}
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
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
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

// Run runs argv on t with stdin (nil for none) over the pool's connection
// and returns what it printed. argv is sent as one line of individually
// quoted words (Quote); a word Quote cannot carry is refused before anything
// is sent. A nonzero exit is a *RemoteError at StageRemoteRefusal when stdout
// is the channel's refusal document, at StageRemoteExit otherwise, with the
// tail of stderr; stdout and stderr are returned with it.
func (p *Pool) Run(ctx context.Context, t registry.Target, argv []string, stdin []byte) (stdout, stderr []byte, err error) {
	if p.Keeper != nil {
		stdout, stderr, err = p.Keeper.Run(ctx, t, p.Dialer, argv, stdin)
		if !errors.Is(err, ErrKeeperUnavailable) {
			return stdout, stderr, err
		}
	}
	line, err := Quote(argv)
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
		return nil, nil, &RemoteError{Host: t.Name, Address: addr, Stage: StageConnect, Err: fmt.Errorf("open session: %w", err)}
	}
	defer sess.Close()
	if stdin != nil {
		sess.Stdin = bytes.NewReader(stdin)
	}
	var out, errb cappedBuffer
	sess.Stdout, sess.Stderr = &out, &errb
	done := make(chan error, 1)
	go func() { done <- sess.Run(line) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = sess.Signal(ssh.SIGKILL)
		sess.Close()
		<-done
		return out.Bytes(), errb.Bytes(), &RemoteError{Host: t.Name, Address: addr, Stage: StageRemoteExit, ExitStatus: -1, StderrTail: tail(errb.Bytes()), Err: ctx.Err()}
	}
	return out.Bytes(), errb.Bytes(), exitOf(err).remoteError(t, addr, argv, &out, &errb)
}

// refusalIn reads the refusal document in stdout, with the capabilities it
// advertised.
func refusalIn(host string, stdout []byte) (*Refusal, []Capability, bool) {
	var doc RefusalDocument
	if json.Unmarshal(bytes.TrimSpace(stdout), &doc) != nil || doc.Kind != KindRefusal || doc.Code == "" {
		return nil, nil, false
	}
	if doc.Protocol != ProtocolVersion && doc.Code == string(CodeUnknownVerb) {
		return protocolMismatch(host, doc.Protocol), doc.Capabilities, true
	}
	return &Refusal{Code: refusal.Code(doc.Code), Message: doc.Message}, doc.Capabilities, true
}

// protocolMismatch is the refusal of a host whose stado speaks another
// channel protocol than this one.
func protocolMismatch(host string, theirs int) *Refusal {
	return &Refusal{Code: refusal.ProtocolMismatch,
		Message: fmt.Sprintf("the stado on %s speaks channel protocol %d and this one %d", host, theirs, ProtocolVersion),
		Hint:    "install the same stado on the host (stado service ensure stado --host " + host + ")"}
}

// Call runs cmd through the remote program on t and returns the result the
// host action produced. cmd is validated locally first (a *Refusal, nothing
// sent). A remote refusal is a *RemoteError at StageRemoteRefusal wrapping a
// *Refusal with the remote code; a failed host action one at StageRemoteExit
// carrying the remote error message.
func (p *Pool) Call(ctx context.Context, t registry.Target, cmd Command, stdin []byte) (json.RawMessage, error) {
	argv := cmd.Argv()
	if _, err := ParseArgv(argv); err != nil {
		return nil, fmt.Errorf("%s: %w", t.Name, err)
	}
	prog := p.RemoteProgram
	if prog == "" {
		prog = DefaultRemoteProgram
	}
	stdout, _, err := p.Run(ctx, t, append([]string{prog, "host", "channel"}, argv...), stdin)
	var re *RemoteError
	if errors.As(err, &re) && re.Stage == StageRemoteExit {
		var doc ErrorDocument
		if json.Unmarshal(bytes.TrimSpace(stdout), &doc) == nil && doc.Kind == KindError {
			re.Err = errors.New(doc.Message)
		}
	}
	if err != nil {
		return nil, err
	}
	var doc ResultDocument
	if err := json.Unmarshal(bytes.TrimSpace(stdout), &doc); err != nil || doc.Kind != KindResult || doc.Verb != cmd.Verb {
		return nil, &RemoteError{Host: t.Name, Stage: StageRemoteExit, Err: fmt.Errorf("%s printed no %s result document for %s", prog, KindResult, cmd.Verb)}
	}
	if doc.Protocol != ProtocolVersion {
		return nil, &RemoteError{Host: t.Name, Stage: StageRemoteRefusal, Err: protocolMismatch(t.Name, doc.Protocol)}
	}
	return doc.Result, nil
}

// cappedBuffer keeps at most maxOutputBytes and notes that more came.
type cappedBuffer struct {
	bytes.Buffer
	over bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := maxOutputBytes - b.Len(); len(p) > room {
		b.over = true
		b.Buffer.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

// tail returns the last lines of stderr, bounded in rows and bytes.
func tail(b []byte) string {
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
