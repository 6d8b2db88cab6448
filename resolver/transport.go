package resolver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wisent/stado/refusal"
)

// HeldError says a service holds a request unanswered past the bound, so
// the resolver refuses new requests to it until it answers.
type HeldError struct {
	Service string
	Host    string
	// Oldest is the oldest held wait.
	Oldest Wait
	// Held is how many requests it holds past the bound.
	Held  int
	Bound time.Duration
	// At is when the refusal was decided.
	At time.Time
}

// Error says the service is held, how many requests it holds and for
// how long the oldest has waited. It never says whose request that is:
// the refusal goes to other clients, and the oldest request's line,
// caller and query belong to its own client.
func (e *HeldError) Error() string {
	return fmt.Sprintf("service %s on %s holds %d request(s) unanswered past the %s bound; the oldest was accepted %s ago; new requests are refused until it answers",
		e.Service, e.Host, e.Held, e.Bound, e.At.Sub(e.Oldest.AcceptedAt).Round(time.Millisecond))
}
func (e *HeldError) RefusalCode() refusal.Code { return refusal.Held }

// HeldBody is the JSON body of the 503 a resolver answers for a held
// service. It names the held service and how long its oldest request has
// waited, never that request's line, caller or query.
type HeldBody struct {
	Kind          string     `json:"kind"`
	Service       string     `json:"service"`
	Host          string     `json:"host"`
	Held          int        `json:"held"`
	BoundSeconds  float64    `json:"bound_seconds"`
	WaitedSeconds float64    `json:"waited_seconds"`
	Oldest        HeldOldest `json:"oldest"`
	Message       string     `json:"message"`
	At            time.Time  `json:"at"`
}

// HeldOldest is what a refused client may know of the oldest held wait.
type HeldOldest struct {
	Endpoint   string    `json:"endpoint"`
	AcceptedAt time.Time `json:"accepted_at"`
	Phase      string    `json:"phase"`
}

// HeldKind is the kind of a HeldBody.
const HeldKind = "stado.resolver.held"

// HeldHeader marks a 503 the resolver made itself, not one the service sent.
const HeldHeader = "X-Stado-Held"

func (e *HeldError) body() []byte {
	b, _ := json.Marshal(HeldBody{
		Kind: HeldKind, Service: e.Service, Host: e.Host, Held: e.Held,
		BoundSeconds: e.Bound.Seconds(), WaitedSeconds: e.At.Sub(e.Oldest.AcceptedAt).Seconds(),
		Oldest:  HeldOldest{Endpoint: e.Oldest.Endpoint, AcceptedAt: e.Oldest.AcceptedAt, Phase: e.Oldest.Phase},
		Message: e.Error(), At: e.At.UTC(),
	})
	return append(b, '\n')
}

func (e *HeldError) response(req *http.Request) *http.Response {
	body := e.body()
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set(HeldHeader, "1")
	if s := int(e.Bound.Seconds()); s > 0 {
		h.Set("Retry-After", strconv.Itoa(s))
	}
	return &http.Response{
		Status: "503 Service Unavailable", StatusCode: http.StatusServiceUnavailable,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
		Request: req,
	}
}

type originKey struct{}

type origin struct{ client, requestLine string }

// WithClient returns a context under which Transport records client as
// the caller of the request (instead of its own Client).
func WithClient(ctx context.Context, client string) context.Context {
	return context.WithValue(ctx, originKey{}, origin{client: client})
}

func withOrigin(ctx context.Context, client, requestLine string) context.Context {
	return context.WithValue(ctx, originKey{}, origin{client: client, requestLine: requestLine})
}

// Transport is an http.RoundTripper for stado://service/<name>/<path>
// URLs: it resolves the service, records the request as a wait (open
// until the request is written, answer until the first response byte),
// and refuses at once with a 503 (HeldHeader set, a HeldBody) while the
// service holds a request past the bound. Other URLs go to Base as they
// are, unrecorded. Safe for concurrent use.
type Transport struct {
	Resolver *Resolver
	Recorder *Recorder
	// Base carries the rewritten request; nil means a clone of
	// http.DefaultTransport.
	Base http.RoundTripper
	// Client is the caller's name in the waits; "" means "pid <pid>".
	Client string

	once sync.Once
	base http.RoundTripper
}

func (t *Transport) roundTripper() http.RoundTripper {
	t.once.Do(func() {
		t.base = t.Base
		if t.base == nil {
			t.base = http.DefaultTransport.(*http.Transport).Clone()
		}
	})
	return t.base
}

// splitServiceURL returns the service and the rest of a
// stado://service/<name>/<rest> URL.
func splitServiceURL(u *url.URL) (name, rest string, ok bool) {
	if u.Scheme != "stado" || u.Host != "service" {
		return "", "", false
	}
	p := strings.TrimPrefix(u.EscapedPath(), "/")
	name, rest, _ = strings.Cut(p, "/")
	if name == "" {
		return "", "", false
	}
	return name, "/" + rest, true
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	name, rest, ok := splitServiceURL(req.URL)
	if !ok {
		if req.URL.Scheme == "stado" {
			if req.Body != nil {
				_ = req.Body.Close()
			}
			return nil, fmt.Errorf("%s: %w", req.URL, ErrBadURI)
		}
		return t.roundTripper().RoundTrip(req)
	}
	ep, err := t.Resolver.Resolve(req.Context(), name)
	if err != nil {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, err
	}
	bound := time.Duration(t.Resolver.RefreshSeconds()) * time.Second
	if oldest, n, held := t.Recorder.HeldOn(name, ep.Host, bound); held {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return (&HeldError{Service: name, Host: ep.Host, Oldest: oldest, Held: n, Bound: bound, At: t.Recorder.now()}).response(req), nil
	}

	u := *req.URL
	u.Scheme, u.Host = "http", ep.String()
	u.RawPath = rest
	if u.Path, err = url.PathUnescape(rest); err != nil {
		return nil, fmt.Errorf("%s: %w", req.URL, ErrBadURI)
	}
	if u.RawPath == u.Path {
		u.RawPath = ""
	}
	o, _ := req.Context().Value(originKey{}).(origin)
	client := o.client
	if client == "" {
		client = t.Client
	}
	if client == "" {
		client = "pid " + strconv.Itoa(os.Getpid())
	}
	line := o.requestLine
	if line == "" {
		proto := req.Proto
		if proto == "" {
			proto = "HTTP/1.1"
		}
		line = req.Method + " " + u.RequestURI() + " " + proto
	}
	line = RequestLineWithoutQuery(line)
	pending := t.Recorder.Begin(Wait{Service: name, Host: ep.Host, Endpoint: ep.String(), Client: client, RequestLine: line})
	defer pending.Done()
	trace := &httptrace.ClientTrace{
		WroteRequest:         func(httptrace.WroteRequestInfo) { pending.Sent() },
		GotFirstResponseByte: pending.Done,
	}
	out := req.Clone(httptrace.WithClientTrace(req.Context(), trace))
	out.URL = &u
	if out.Host == "" || out.Host == "service" {
		out.Host = ""
	}
	resp, err := t.roundTripper().RoundTrip(out)
	if err != nil {
		return nil, fmt.Errorf("%s on %s (%s): %w", name, ep.Host, ep, err)
	}
	return resp, nil
}

// isRefusal tells the proxy which errors are the resolver's own refusals.
func isRefusal(err error) (status int, ok bool) {
	var (
		cr *CallerRefusedError
		nd *NotInDirectoryError
		np *NoPortError
	)
	switch {
	case errors.As(err, &cr):
		return http.StatusForbidden, true
	case errors.As(err, &nd), errors.As(err, &np), errors.Is(err, ErrBadURI):
		return http.StatusBadGateway, true
	}
	return http.StatusBadGateway, false
}

// RequestLineWithoutQuery is what the waiting list and the logs keep of a
// request line: an HTTP request line ("GET /path?q HTTP/1.1") loses its
// query and fragment, which may carry tokens, and keeps what a peer needs
// to tell requests apart ("GET /path HTTP/1.1"). Any other line (a TCP
// client's first line, a note made by stado) is returned as it is.
func RequestLineWithoutQuery(line string) string {
	method, rest, ok1 := strings.Cut(line, " ")
	target, proto, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 || method == "" || !strings.HasPrefix(proto, "HTTP/") {
		return line
	}
	if i := strings.IndexAny(target, "?#"); i >= 0 {
		target = target[:i]
	}
	return method + " " + target + " " + proto
}
