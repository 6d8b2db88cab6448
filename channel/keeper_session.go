package channel

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// DefaultSessionStart bounds the wait for a remote session's first line.
const DefaultSessionStart = 5 * time.Second

// maxIdleSessions bounds the sessions a kept connection keeps open between
// calls; more run at once when more calls to one host are in flight.
const maxIdleSessions = 4

// errNoSession says the host's remote program serves no sessions (an older
// stado): calls go one execution each.
var errNoSession = errors.New("the remote program serves no sessions")

// remoteSession is one running `stado host channel session` on a kept
// connection, serving one call at a time.
type remoteSession struct {
	sess *ssh.Session
	in   io.WriteCloser
	out  *bufio.Reader
}

// sessions are a kept connection's idle sessions; none when the host has
// no session support.
type sessions struct {
	mu          sync.Mutex
	idle        []*remoteSession
	unsupported bool
}

// channelCall splits argv into the remote program and the verb call when
// argv runs the host channel (PROGRAM host channel VERB ...).
func channelCall(argv []string) (prog string, call []string, ok bool) {
	if len(argv) >= 4 && argv[1] == "host" && argv[2] == "channel" && argv[3] != string(VerbSession) {
		return argv[0], argv[3:], true
	}
	return "", nil, false
}

// take returns an idle session of kc, or starts one running prog.
func (s *sessions) take(ctx context.Context, client *ssh.Client, prog string, wait time.Duration) (*remoteSession, error) {
	s.mu.Lock()
	if s.unsupported {
		s.mu.Unlock()
		return nil, errNoSession
	}
	if n := len(s.idle); n > 0 {
		rs := s.idle[n-1]
		s.idle = s.idle[:n-1]
		s.mu.Unlock()
		return rs, nil
	}
	s.mu.Unlock()
	rs, err := startSession(ctx, client, prog, wait)
	if errors.Is(err, errNoSession) {
		s.mu.Lock()
		s.unsupported = true
		s.mu.Unlock()
	}
	return rs, err
}

// put gives a session back after a call that completed.
func (s *sessions) put(rs *remoteSession) {
	s.mu.Lock()
	if len(s.idle) < maxIdleSessions {
		s.idle = append(s.idle, rs)
		rs = nil
	}
	s.mu.Unlock()
	if rs != nil {
		rs.close()
	}
}

func startSession(ctx context.Context, client *ssh.Client, prog string, wait time.Duration) (*remoteSession, error) {
	sess, err := client.NewSession()
	if err != nil {
		return nil, fmt.Errorf("open session: %w", err)
	}
	in, err := sess.StdinPipe()
	if err != nil {
		sess.Close()
		return nil, err
	}
	outPipe, err := sess.StdoutPipe()
	if err != nil {
		sess.Close()
		return nil, err
	}
	line, err := Quote([]string{prog, "host", "channel", string(VerbSession)})
	if err != nil {
		sess.Close()
		return nil, err
	}
	if err := sess.Start(line); err != nil {
		sess.Close()
		return nil, fmt.Errorf("start session: %w", err)
	}
	rs := &remoteSession{sess: sess, in: in, out: bufio.NewReader(outPipe)}
	hello := make(chan error, 1)
	go func() {
		l, err := rs.out.ReadString('\n')
		switch {
		case err != nil:
			hello <- errNoSession // it printed a refusal document, or nothing, and ended
		case l != SessionHello:
			hello <- errNoSession
		default:
			hello <- nil
		}
	}()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case err = <-hello:
	case <-timer.C:
		err = errNoSession // not a session-serving program, or wedged
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		rs.close()
		return nil, err
	}
	return rs, nil
}

// call runs one verb call (call[0] is the verb) with stdin and returns what
// the remote program answered. An error means the session is unusable; it
// is closed, and the call may or may not have run.
func (rs *remoteSession) call(ctx context.Context, call []string, stdin []byte) (sessionResponse, error) {
	var resp sessionResponse
	done := make(chan error, 1)
	go func() {
		if err := writeSessionFrame(rs.in, sessionRequest{Argv: call, Stdin: stdin}); err != nil {
			done <- err
			return
		}
		done <- readSessionFrame(rs.out, &resp)
	}()
	select {
	case err := <-done:
		if err != nil {
			rs.close()
			return resp, fmt.Errorf("session: %w", err)
		}
		return resp, nil
	case <-ctx.Done():
		rs.close()
		<-done
		return resp, ctx.Err()
	}
}

func (rs *remoteSession) close() {
	_ = rs.in.Close()
	_ = rs.sess.Close()
}
