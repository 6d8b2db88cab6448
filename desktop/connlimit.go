package desktop

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"
)

// connLimit keeps the page's open connections at or under max. When a new
// connection would pass the bound it closes an idle one to make room,
// preferring, oldest first, a connection that never showed the token, then
// any idle one; when every connection is busy the new one is closed. So
// connections opened by someone without the token cannot keep the token
// holder out, and the page never holds more descriptors than the bound.
type connLimit struct {
	net.Listener
	max int

	mu    sync.Mutex
	conns map[net.Conn]*connInfo
}

type connInfo struct {
	opened time.Time
	state  http.ConnState
	authed bool
}

func newConnLimit(ln net.Listener, max int) *connLimit {
	return &connLimit{Listener: ln, max: max, conns: map[net.Conn]*connInfo{}}
}

// Accept returns the next connection after making room for it.
func (l *connLimit) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.admit(c) {
			return c, nil
		}
		c.Close()
	}
}

// admit records c, evicting one idle connection when the bound is reached;
// false when there is none to evict.
func (l *connLimit) admit(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.conns) >= l.max {
		victim := l.idlest()
		if victim == nil {
			return false
		}
		delete(l.conns, victim)
		victim.Close()
	}
	l.conns[c] = &connInfo{opened: time.Now(), state: http.StateNew}
	return true
}

// idlest picks the connection to evict: the oldest idle or new one that
// never showed the token, else the oldest idle one; nil when all are busy.
func (l *connLimit) idlest() net.Conn {
	var best net.Conn
	var bi *connInfo
	for c, ci := range l.conns {
		if ci.state != http.StateIdle && ci.state != http.StateNew {
			continue
		}
		if ci.state == http.StateNew && ci.authed {
			continue
		}
		if bi == nil || (!ci.authed && bi.authed) || (ci.authed == bi.authed && ci.opened.Before(bi.opened)) {
			best, bi = c, ci
		}
	}
	return best
}

// track follows each connection's state (http.Server.ConnState).
func (l *connLimit) track(c net.Conn, st http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if st == http.StateClosed || st == http.StateHijacked {
		delete(l.conns, c)
		return
	}
	if ci := l.conns[c]; ci != nil {
		ci.state = st
	}
}

type connKey struct{}

// context lets a request reach its connection's record
// (http.Server.ConnContext).
func (l *connLimit) context(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, func() {
		l.mu.Lock()
		if ci := l.conns[c]; ci != nil {
			ci.authed = true
		}
		l.mu.Unlock()
	})
}

// markAuthenticated records that the request's connection showed the token.
func markAuthenticated(r *http.Request) {
	if mark, ok := r.Context().Value(connKey{}).(func()); ok {
		mark()
	}
}
