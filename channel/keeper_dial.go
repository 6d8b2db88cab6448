package channel

import (
	"context"
	"net"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// hostKeySeen is the host key a connection was established with, and the
// address and remote it was checked for: what a kept connection is checked
// against known_hosts again before each reuse. A re-key that presents (and
// passes the check with) another key replaces it.
type hostKeySeen struct {
	mu     sync.Mutex
	addr   string
	remote net.Addr
	key    ssh.PublicKey
}

func (s *hostKeySeen) set(addr string, remote net.Addr, key ssh.PublicKey) {
	s.mu.Lock()
	s.addr, s.remote, s.key = addr, remote, key
	s.mu.Unlock()
}

func (s *hostKeySeen) get() (addr string, remote net.Addr, key ssh.PublicKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr, s.remote, s.key
}

// dialEndpoint is Dial after Resolve: it connects and authenticates to an
// already resolved endpoint, checking its host key strictly, and also
// returns the host key the connection was established with. Every error is
// a *RemoteError naming the host and stage; it does not retry.
//
// Dial is Resolve followed by this; the keeper calls it directly because the
// client resolves the endpoint in its own environment (home, working
// directory, ssh_config) and the keeper re-checks the returned key.
func (d *Dialer) dialEndpoint(ctx context.Context, ep Endpoint) (*ssh.Client, *hostKeySeen, error) {
	fail := func(stage Stage, err error) error {
		return &RemoteError{Host: ep.Host, Address: ep.HostPort(), Stage: stage, Err: err}
	}
	timeout := d.ConnectTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	addr := ep.HostPort()
	auth, closeAgent, err := d.authMethod(ep)
	if err != nil {
		return nil, nil, fail(StageAuth, err)
	}
	conn, err := (&net.Dialer{Timeout: timeout}).DialContext(ctx, "tcp", addr)
	if err != nil {
		closeAgent()
		return nil, nil, fail(StageConnect, err)
	}
	_ = conn.SetDeadline(time.Now().Add(timeout))
	stop := context.AfterFunc(ctx, func() { conn.Close() })

	checker := &hostKeyChecker{host: ep.Host, path: d.knownHostsPath(), acceptNew: d.AcceptNewHostKey}
	algos, err := knownAlgorithms(checker.path, addr, conn.RemoteAddr())
	if err != nil {
		stop()
		conn.Close()
		closeAgent()
		return nil, nil, fail(StageHostKey, err)
	}
	seen := new(hostKeySeen)
	cfg := &ssh.ClientConfig{
		User: ep.User,
		Auth: []ssh.AuthMethod{auth.method},
		HostKeyCallback: func(addr string, remote net.Addr, key ssh.PublicKey) error {
			if err := checker.callback(addr, remote, key); err != nil {
				return err
			}
			seen.set(addr, remote, key)
			return nil
		},
		HostKeyAlgorithms: algos,
		Timeout:           timeout,
	}
	c, chans, reqs, err := ssh.NewClientConn(conn, addr, cfg)
	closeAgent()
	stopped := stop()
	if err == nil && !stopped {
		err = ctx.Err()
		c.Close()
	}
	if err != nil {
		conn.Close()
		switch {
		case checker.refused != nil:
			return nil, nil, fail(StageHostKey, checker.refused)
		case ctx.Err() != nil:
			return nil, nil, fail(StageConnect, ctx.Err())
		case checker.checked:
			return nil, nil, fail(StageAuth, auth.explain(err))
		default:
			return nil, nil, fail(StageConnect, err)
		}
	}
	_ = conn.SetDeadline(time.Time{})
	client := ssh.NewClient(c, chans, reqs)
	if every := d.keepAliveInterval(); every > 0 {
		missed := d.KeepAliveMissed
		if missed <= 0 {
			missed = 3
		}
		go keepAlive(client, every, missed)
	}
	return client, seen, nil
}
