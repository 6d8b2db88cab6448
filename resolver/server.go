package resolver

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Bounds of the resolver proxy's listener (docs/limits.md). A client that
// opens connections and sends nothing, or sends its request a byte at a
// time, is cut off; the number of connections open at once is capped, so
// idle keep-alive connections cannot pile up. A slow answer is never cut:
// how long a service takes to answer is what the waiting list records.
const (
	// ProxyReadHeaderTimeout bounds reading a request's header.
	ProxyReadHeaderTimeout = 10 * time.Second
	// ProxyReadTimeout bounds reading a whole request, body included.
	ProxyReadTimeout = 2 * time.Minute
	// ProxyIdleTimeout closes a keep-alive connection idle this long.
	ProxyIdleTimeout = 60 * time.Second
	// ProxyMaxHeaderBytes caps a request's header.
	ProxyMaxHeaderBytes = 64 << 10
	// ProxyMaxConns caps the connections open at once, in HTTP and TCP
	// mode; further clients wait in the kernel's accept queue.
	ProxyMaxConns = 512
)

// NewProxyServer returns the HTTP server of the resolver proxy with the
// bounds above.
func NewProxyServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ProxyReadHeaderTimeout,
		ReadTimeout:       ProxyReadTimeout,
		IdleTimeout:       ProxyIdleTimeout,
		MaxHeaderBytes:    ProxyMaxHeaderBytes,
	}
}

// LimitListener returns a listener that holds at most n connections
// accepted from ln open at once: Accept waits while n are open.
func LimitListener(ln net.Listener, n int) net.Listener {
	return &limitListener{Listener: ln, sem: make(chan struct{}, n), done: make(chan struct{})}
}

type limitListener struct {
	net.Listener
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
}

func (l *limitListener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// CloseWrite keeps half-closing available through the wrapper (TCP mode
// forwards a client's end of stream).
func (c *limitConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
