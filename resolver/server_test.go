package resolver

import (
	"net"
	"net/http"
	"testing"
	"time"
)

// The proxy's server bounds every phase a client controls (header, body,
// idle keep-alive) and never the service's answer.
func TestProxyServerBoundsWhatAClientControls(t *testing.T) {
	srv := NewProxyServer(http.NotFoundHandler())
	for _, tc := range []struct {
		name string
		got  time.Duration
		want time.Duration
	}{
		// a client that never finishes its header
		{"read header", srv.ReadHeaderTimeout, ProxyReadHeaderTimeout},
		// a client that sends its body a byte at a time
		{"read", srv.ReadTimeout, ProxyReadTimeout},
		// a keep-alive connection left idle
		{"idle", srv.IdleTimeout, ProxyIdleTimeout},
		// a slow answer is what the waiting list measures: never cut
		{"write", srv.WriteTimeout, 0},
		// a header of any size: capped
		{"header bytes", time.Duration(srv.MaxHeaderBytes), ProxyMaxHeaderBytes},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	if ProxyReadHeaderTimeout <= 0 || ProxyReadTimeout < ProxyReadHeaderTimeout || ProxyIdleTimeout <= 0 || ProxyMaxConns <= 0 {
		t.Error("a bound is missing")
	}
}

// At most n connections are open at once: the next waits until one
// closes, whoever holds them (idle keep-alive clients included).
func TestLimitListenerCapsOpenConnections(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := LimitListener(raw, 2)
	defer ln.Close()
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	for i := 0; i < 3; i++ {
		c, err := net.Dial("tcp", raw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	first, second := <-accepted, <-accepted
	select {
	case c := <-accepted:
		t.Fatalf("a third connection %v was accepted beside two open ones", c.RemoteAddr())
	case <-time.After(100 * time.Millisecond):
	}
	first.Close()
	third := <-accepted
	if third == nil {
		t.Fatal("the listener closed instead of accepting the waiting client")
	}
	second.Close()
	third.Close()
	ln.Close()
	for range accepted {
	}
}
