package resolver

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wisent/stado/registry"
)

// holdingService is a real HTTP server on 127.0.0.1: /hold accepts and
// answers only once release is called; every other path answers at once.
type holdingService struct {
	srv      *httptest.Server
	released chan struct{}
	once     sync.Once
	served   atomic.Int64 // requests other than /hold that reached it
}

func newHoldingService(t *testing.T) *holdingService {
	t.Helper()
	h := &holdingService{released: make(chan struct{})}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			select {
			case <-h.released:
			case <-r.Context().Done():
				return
			}
			_, _ = io.WriteString(w, "answered at last\n")
			return
		}
		h.served.Add(1)
		_, _ = io.WriteString(w, "ok "+r.URL.RequestURI()+"\n")
	}))
	t.Cleanup(func() { h.release(); h.srv.Close() })
	return h
}

func (h *holdingService) release() { h.once.Do(func() { close(h.released) }) }

func (h *holdingService) port(t *testing.T) int {
	_, p, _ := net.SplitHostPort(h.srv.Listener.Addr().String())
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// directoryFor declares service on host2 at 127.0.0.1:port, bound 5 s.
func directoryFor(service string, port int) *registry.Document {
	return &registry.Document{
		Version:         1,
		ServiceResolver: registry.ServiceResolver{RefreshSeconds: 5},
		Directory:       []registry.DirectoryEntry{{Service: service, Host: "host2", Port: port}},
		Targets: []registry.Target{
			{Name: "host1", SSH: registry.SSH{Address: "127.0.0.1"}, OS: "linux"},
			{Name: "host2", SSH: registry.SSH{Address: "127.0.0.1"}, OS: "linux"},
		},
	}
}

type syncClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *syncClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *syncClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newTransport(doc *registry.Document, c *syncClock) *Transport {
	return &Transport{
		Resolver: &Resolver{Load: func(context.Context) (*registry.Document, error) { return doc, nil }, Caller: "host1", Now: c.now},
		Recorder: &Recorder{Now: c.now},
	}
}

// eventually polls cond until it holds or a generous deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestProxyRefusesAHeldServiceAtOnceAndAcceptsAgainAfterItAnswers(t *testing.T) {
	svc := newHoldingService(t)
	c := &syncClock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
	tr := newTransport(directoryFor("brama", svc.port(t)), c)
	proxy := httptest.NewServer((&Proxy{Service: "brama", Transport: tr}).Handler())
	t.Cleanup(proxy.Close)

	held := make(chan string, 1)
	go func() {
		resp, err := http.Get(proxy.URL + "/hold")
		if err != nil {
			held <- "error: " + err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		held <- string(b)
	}()
	eventually(t, "the held request in phase answer", func() bool {
		s := tr.Recorder.Snapshot()
		return len(s) == 1 && s[0].Phase == PhaseAnswer
	})
	w := tr.Recorder.Snapshot()[0]
	if w.RequestLine != "GET /hold HTTP/1.1" || w.Service != "brama" || w.Host != "host2" || !strings.HasPrefix(w.Client, "127.0.0.1:") || w.Endpoint != "127.0.0.1:"+strconv.Itoa(svc.port(t)) {
		t.Fatalf("wait = %+v", w)
	}

	// Younger than the bound: new requests still go through.
	resp, err := http.Get(proxy.URL + "/v1/ping?x=1")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "ok /v1/ping?x=1\n" {
		t.Fatalf("before the bound: %d %q", resp.StatusCode, b)
	}

	// Past the bound: refused by the proxy itself, never reaching the service.
	c.add(5*time.Second + time.Millisecond)
	before := svc.served.Load()
	resp, err = http.Post(proxy.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get(HeldHeader) != "1" {
		t.Fatalf("held: status %d header %q body %s", resp.StatusCode, resp.Header.Get(HeldHeader), b)
	}
	var body HeldBody
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatalf("body %s: %v", b, err)
	}
	if body.Kind != HeldKind || body.Service != "brama" || body.Host != "host2" || body.Held != 1 ||
		body.BoundSeconds != 5 || body.Oldest.Phase != PhaseAnswer || body.Oldest.Endpoint != w.Endpoint ||
		strings.Contains(string(b), "/hold") || strings.Contains(string(b), w.Client) {
		t.Fatalf("held body = %+v", body)
	}
	if svc.served.Load() != before {
		t.Fatal("a refused request reached the service")
	}

	// The service answers the held request: the proxy accepts again.
	svc.release()
	if got := <-held; got != "answered at last\n" {
		t.Fatalf("held request ended with %q", got)
	}
	eventually(t, "no waits left", func() bool { return len(tr.Recorder.Snapshot()) == 0 })
	resp, err = http.Get(proxy.URL + "/v1/ping")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("after the answer: %d", resp.StatusCode)
	}
}

func TestTransportRecordsOpenThenAnswer(t *testing.T) {
	svc := newHoldingService(t)
	c := &syncClock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
	tr := newTransport(directoryFor("brama", svc.port(t)), c)
	// A real dialer that waits for a go-ahead, so the open phase is seen.
	goAhead := make(chan struct{})
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		<-goAhead
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	tr.Base = base
	tr.Client = "billing-batch"
	client := &http.Client{Transport: tr}

	done := make(chan error, 1)
	go func() {
		resp, err := client.Get("stado://service/brama/hold")
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	eventually(t, "the wait in phase open", func() bool {
		s := tr.Recorder.Snapshot()
		return len(s) == 1 && s[0].Phase == PhaseOpen
	})
	w := tr.Recorder.Snapshot()[0]
	if w.Client != "billing-batch" || w.RequestLine != "GET /hold HTTP/1.1" {
		t.Fatalf("open wait = %+v", w)
	}
	close(goAhead)
	eventually(t, "the wait in phase answer", func() bool {
		s := tr.Recorder.Snapshot()
		return len(s) == 1 && s[0].Phase == PhaseAnswer
	})
	svc.release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s := tr.Recorder.Snapshot(); len(s) != 0 {
		t.Fatalf("waits after the answer: %+v", s)
	}
	// A service missing from the directory is an error naming it.
	_, err := client.Get("stado://service/nothere/x")
	if err == nil || !strings.Contains(err.Error(), `"nothere"`) {
		t.Fatalf("absent service: %v", err)
	}
}

// holdingTCP accepts, reads, and writes its answer only once released.
func holdingTCP(t *testing.T) (addr string, release func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rel := make(chan struct{})
	var once sync.Once
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				line, _ := bufio.NewReader(conn).ReadString('\n')
				<-rel
				_, _ = io.WriteString(conn, "echo "+line)
			}()
		}
	}()
	release = func() { once.Do(func() { close(rel) }) }
	t.Cleanup(func() { release(); ln.Close() })
	return ln.Addr().String(), release
}

func TestTCPProxyRecordsAndRefusesAHeldService(t *testing.T) {
	addr, release := holdingTCP(t)
	_, p, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(p)
	c := &syncClock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
	tr := newTransport(directoryFor("queue", port), c)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- (&Proxy{Service: "queue", Transport: tr}).ServeTCP(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-served })

	first, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if _, err := io.WriteString(first, "PUT job-1\n"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the connection's wait in phase answer", func() bool {
		s := tr.Recorder.Snapshot()
		return len(s) == 1 && s[0].Phase == PhaseAnswer
	})
	if w := tr.Recorder.Snapshot()[0]; w.RequestLine != "PUT job-1" || w.Endpoint != addr {
		t.Fatalf("wait = %+v", w)
	}
	c.add(6 * time.Second)
	// Held: a new connection is closed at once without a byte.
	second, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	n, err := second.Read(make([]byte, 1))
	second.Close()
	if n != 0 || err == nil {
		t.Fatalf("held service: read %d bytes, err %v; want a closed connection", n, err)
	}
	release()
	got, err := bufio.NewReader(first).ReadString('\n')
	if err != nil || got != "echo PUT job-1\n" {
		t.Fatalf("first connection got %q %v", got, err)
	}
	eventually(t, "no waits left", func() bool { return len(tr.Recorder.Snapshot()) == 0 })
}
