package sshclient

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/wisent/stado/channel"
	"golang.org/x/crypto/ssh"
)

// DefaultSessionStart bounds the wait for a remote session's first line.
const DefaultSessionStart = 5 * time.Second

// ErrNoSession says the host's remote program serves no sessions (an older
// stado, or one that did not print SessionHello in time): calls go one
// execution each.
var ErrNoSession = errors.New("the remote program serves no sessions")

// RemoteSession is one running `PROGRAM host channel session` on an SSH
// connection, serving one call at a time. It is not safe for concurrent
// use: whoever holds it makes one call, then gives it back or closes it.
type RemoteSession struct {
	sess *ssh.Session
	in   io.WriteCloser
	out  *bufio.Reader
}

// StartSession runs prog's session verb over client and waits up to wait
// for its SessionHello. ErrNoSession means the program printed something
// else, ended, or did not answer in time; ctx's error when it ended first;
// other errors when the session could not be opened. It touches the host:
// it starts the remote program.
func StartSession(ctx context.Context, client *ssh.Client, prog string, wait time.Duration) (*RemoteSession, error) {
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
	line, err := channel.Quote([]string{prog, "host", "channel", string(channel.VerbSession)})
	if err != nil {
		sess.Close()
		return nil, err
	}
	if err := sess.Start(line); err != nil {
		sess.Close()
		return nil, fmt.Errorf("start session: %w", err)
	}
	rs := &RemoteSession{sess: sess, in: in, out: bufio.NewReader(outPipe)}
	hello := make(chan error, 1)
	go func() {
		l, err := rs.out.ReadString('\n')
		switch {
		case err != nil:
			hello <- ErrNoSession // it printed a refusal document, or nothing, and ended
		case l != channel.SessionHello:
			hello <- ErrNoSession
		default:
			hello <- nil
		}
	}()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case err = <-hello:
	case <-timer.C:
		err = ErrNoSession // not a session-serving program, or wedged
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		rs.Close()
		return nil, err
	}
	return rs, nil
}

// Call runs one verb call (call[0] is the verb) with stdin and returns what
// the remote program answered. An error means the session is unusable; it
// is closed, and the call may or may not have run.
func (rs *RemoteSession) Call(ctx context.Context, call []string, stdin []byte) (channel.SessionResponse, error) {
	var resp channel.SessionResponse
	done := make(chan error, 1)
	go func() {
		if err := channel.WriteSessionCall(rs.in, call, stdin); err != nil {
			done <- err
			return
		}
		var err error
		resp, err = channel.ReadSessionResponse(rs.out)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			rs.Close()
			return resp, fmt.Errorf("session: %w", err)
		}
		return resp, nil
	case <-ctx.Done():
		rs.Close()
		<-done
		return resp, ctx.Err()
	}
}

// Close ends the session.
func (rs *RemoteSession) Close() {
	_ = rs.in.Close()
	_ = rs.sess.Close()
}
