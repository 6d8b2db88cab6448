package resolver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"sync"
	"time"
	"unicode"

	"github.com/wisent/stado/refusal"
)

// Proxy forwards the requests of local clients to one service, recording
// each as a wait through its Transport.
type Proxy struct {
	// Service is the directory name of the service the proxy serves.
	Service   string
	Transport *Transport
	// Client, when set, is recorded as the caller of every request instead
	// of the remote address.
	Client string
	Logger *slog.Logger
}

func (p *Proxy) logger() *slog.Logger {
	if p.Logger != nil {
		return p.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func (p *Proxy) client(remote string) string {
	if p.Client != "" {
		return p.Client
	}
	return remote
}

// ProxyErrorBody is the JSON body of a request the proxy could not
// forward.
type ProxyErrorBody struct {
	Kind    string `json:"kind"`
	Service string `json:"service"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Handler is the HTTP reverse proxy: every request goes to the service as
// it is, path and query kept. A held service is refused with the
// Transport's 503; a resolution refusal is a 403 (caller not allowed) or a
// 502 naming the cause; a failed upstream is a 502 naming it.
func (p *Proxy) Handler() http.Handler {
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			u := *pr.In.URL
			u.Scheme, u.Host = "stado", "service"
			u.Path = "/" + p.Service + pr.In.URL.Path
			if pr.In.URL.RawPath != "" {
				u.RawPath = "/" + p.Service + pr.In.URL.RawPath
			}
			pr.Out.URL = &u
			pr.Out.Host = ""
			pr.SetXForwarded()
			line := RequestLineWithoutQuery(pr.In.Method + " " + pr.In.RequestURI + " " + pr.In.Proto)
			pr.Out = pr.Out.WithContext(withOrigin(pr.Out.Context(), p.client(pr.In.RemoteAddr), line))
		},
		Transport: p.Transport,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			status, refused := isRefusal(err)
			code := "upstream_failed"
			var coded refusal.Coded
			if refused && errors.As(err, &coded) {
				code = string(coded.RefusalCode())
			}
			if errors.Is(err, context.Canceled) {
				return // the client went away
			}
			p.logger().Warn("proxy", "service", p.Service, "request", RequestLineWithoutQuery(r.Method+" "+r.RequestURI+" "+r.Proto), "err", err)
			body, _ := json.Marshal(ProxyErrorBody{Kind: "stado.resolver.error", Service: p.Service, Code: code, Message: err.Error()})
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = w.Write(append(body, '\n'))
		},
		ErrorLog: slog.NewLogLogger(p.logger().Handler(), slog.LevelWarn),
	}
	return rp
}

// ServeTCP accepts connections on ln until it is closed or ctx ends and
// forwards each to the service as plain TCP. Each connection's first
// exchange is a wait: open from accept until the client's first bytes are
// forwarded, answer until the service's first byte. Its request line is
// the first line the client sent when that is text. A held service's new
// connections are closed at once, unanswered. ServeTCP returns nil when ctx
// ends, else the accept error.
func (p *Proxy) ServeTCP(ctx context.Context, ln net.Listener) error {
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("accept on %s: %w", ln.Addr(), err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.forward(ctx, conn)
		}()
	}
}

func (p *Proxy) forward(ctx context.Context, conn net.Conn) {
	defer conn.Close()
	t := p.Transport
	ep, err := t.Resolver.Resolve(ctx, p.Service)
	if err != nil {
		p.logger().Warn("proxy", "service", p.Service, "err", err)
		return
	}
	bound := secondsOf(t.Resolver.RefreshSeconds())
	if oldest, n, held := t.Recorder.HeldOn(p.Service, ep.Host, bound); held {
		e := &HeldError{Service: p.Service, Host: ep.Host, Oldest: oldest, Held: n, Bound: bound, At: t.Recorder.now()}
		p.logger().Warn("proxy refused a connection", "client", conn.RemoteAddr().String(), "err", e)
		return
	}
	pending := t.Recorder.Begin(Wait{Service: p.Service, Host: ep.Host, Endpoint: ep.String(),
		Client: p.client(conn.RemoteAddr().String()), RequestLine: "(nothing sent yet)"})
	defer pending.Done()
	var d net.Dialer
	up, err := d.DialContext(ctx, "tcp", ep.String())
	if err != nil {
		p.logger().Warn("proxy", "service", p.Service, "endpoint", ep.String(), "err", err)
		return
	}
	defer up.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close(); _ = up.Close() })
	defer stop()

	done := make(chan struct{}, 2)
	go func() { // client → service
		buf := make([]byte, 32<<10)
		first := true
		for {
			n, rerr := conn.Read(buf)
			if n > 0 {
				if first {
					t.Recorder.setRequestLine(pending, requestLineOf(buf[:n]))
				}
				if _, werr := up.Write(buf[:n]); werr != nil {
					break
				}
				if first {
					pending.Sent()
					first = false
				}
			}
			if rerr != nil {
				break
			}
		}
		if tc, ok := up.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}()
	go func() { // service → client
		buf := make([]byte, 32<<10)
		for {
			n, rerr := up.Read(buf)
			if n > 0 {
				pending.Done()
				if _, werr := conn.Write(buf[:n]); werr != nil {
					break
				}
			}
			if rerr != nil {
				break
			}
		}
		pending.Done()
		if tc, ok := conn.(interface{ CloseWrite() error }); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}()
	<-done
	<-done
}

func secondsOf(s int) time.Duration { return time.Duration(s) * time.Second }

// requestLineOf is the first line of b when it is printable text, else a
// note of its size.
func requestLineOf(b []byte) string {
	line := b
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		line = b[:i]
	}
	line = bytes.TrimRight(line, "\r")
	if len(line) > 200 {
		line = line[:200]
	}
	for _, r := range string(line) {
		if !unicode.IsPrint(r) {
			return "(" + strconv.Itoa(len(b)) + " bytes of binary)"
		}
	}
	if len(line) == 0 {
		return "(" + strconv.Itoa(len(b)) + " bytes)"
	}
	return RequestLineWithoutQuery(string(line))
}
