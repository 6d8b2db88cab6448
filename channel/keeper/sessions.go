package keeper

import (
	"context"
	"errors"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/channel/sshclient"
)

// maxIdleSessions bounds the sessions a kept connection keeps open between
// calls; more run at once when more calls to one host are in flight.
const maxIdleSessions = 4

// sessions are a kept connection's idle sessions (sshclient.RemoteSession);
// none when the host has no session support.
type sessions struct {
	mu          sync.Mutex
	idle        []*sshclient.RemoteSession
	unsupported bool
	// warming is open while warm starts a session for the pool: a call
	// that finds none idle waits for that one rather than starting a
	// second remote program beside it.
	warming chan struct{}
}

// channelCall splits argv into the remote program and the verb call when
// argv runs the host channel (PROGRAM host channel VERB ...).
func channelCall(argv []string) (prog string, call []string, ok bool) {
	if len(argv) >= 4 && argv[1] == "host" && argv[2] == "channel" && argv[3] != string(channel.VerbSession) {
		return argv[0], argv[3:], true
	}
	return "", nil, false
}

// take returns an idle session of kc, or starts one running prog. A host
// that serves no sessions is remembered: later calls get
// sshclient.ErrNoSession at once.
func (s *sessions) take(ctx context.Context, client *ssh.Client, prog string, wait time.Duration) (*sshclient.RemoteSession, error) {
	for {
		s.mu.Lock()
		if s.unsupported {
			s.mu.Unlock()
			return nil, sshclient.ErrNoSession
		}
		if n := len(s.idle); n > 0 {
			rs := s.idle[n-1]
			s.idle = s.idle[:n-1]
			s.mu.Unlock()
			return rs, nil
		}
		warming := s.warming
		s.mu.Unlock()
		if warming == nil {
			return s.start(ctx, client, prog, wait)
		}
		select {
		case <-warming:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// warm starts one session running prog and keeps it idle for the next
// call, unless one is idle or already warming. Calls that arrive meanwhile
// wait for it (take).
func (s *sessions) warm(ctx context.Context, client *ssh.Client, prog string, wait time.Duration) {
	s.mu.Lock()
	if s.unsupported || len(s.idle) > 0 || s.warming != nil {
		s.mu.Unlock()
		return
	}
	done := make(chan struct{})
	s.warming = done
	s.mu.Unlock()
	rs, err := s.start(ctx, client, prog, wait)
	if err == nil {
		s.put(rs)
	}
	s.mu.Lock()
	s.warming = nil
	s.mu.Unlock()
	close(done)
}

// start starts a session running prog; a host that serves none is
// remembered.
func (s *sessions) start(ctx context.Context, client *ssh.Client, prog string, wait time.Duration) (*sshclient.RemoteSession, error) {
	rs, err := sshclient.StartSession(ctx, client, prog, wait)
	if errors.Is(err, sshclient.ErrNoSession) {
		s.mu.Lock()
		s.unsupported = true
		s.mu.Unlock()
	}
	return rs, err
}

// put gives a session back after a call that completed.
func (s *sessions) put(rs *sshclient.RemoteSession) {
	s.mu.Lock()
	if len(s.idle) < maxIdleSessions {
		s.idle = append(s.idle, rs)
		rs = nil
	}
	s.mu.Unlock()
	if rs != nil {
		rs.Close()
	}
}
