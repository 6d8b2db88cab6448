package resolver

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
)

func fleet() *registry.Document {
	return &registry.Document{
		Version:         1,
		ServiceResolver: registry.ServiceResolver{RefreshSeconds: 5},
		Directory: []registry.DirectoryEntry{
			{Service: "brama", Host: "host2", Port: 8080},
			{Service: "skarbiec", Host: "host1", Port: 9090, Callers: []string{"host2"}},
			{Service: "bare", Host: "host3", Port: 7000},
		},
		Targets: []registry.Target{
			{Name: "host1", SSH: registry.SSH{Address: "127.0.1.1"}, OS: "linux"},
			{Name: "host2", SSH: registry.SSH{Address: "127.0.1.2"}, OS: "linux"},
			{Name: "host3", OS: "linux"},
		},
	}
}

// countingLoader serves doc and counts reads, like a store would be read.
type countingLoader struct {
	doc   *registry.Document
	reads int
	err   error
}

func (l *countingLoader) load(context.Context) (*registry.Document, error) {
	l.reads++
	if l.err != nil {
		return nil, l.err
	}
	return l.doc, nil
}

func TestResolveThroughTheDirectory(t *testing.T) {
	cases := []struct {
		name, caller, service string
		want                  Endpoint
		code                  string // RefusalCode of the error; "" for success
		mention               []string
	}{
		// The target's ssh address is where the service answers.
		{name: "address", caller: "host1", service: "brama",
			want: Endpoint{Service: "brama", Host: "host2", Address: "127.0.1.2", Port: 8080, Choice: ChoiceDirectory}},
		// A target without an address answers at its name.
		{name: "name", caller: "host1", service: "bare",
			want: Endpoint{Service: "bare", Host: "host3", Address: "host3", Port: 7000, Choice: ChoiceDirectory}},
		// A listed caller may call.
		{name: "listed caller", caller: "host2", service: "skarbiec",
			want: Endpoint{Service: "skarbiec", Host: "host1", Address: "127.0.1.1", Port: 9090, Choice: ChoiceDirectory}},
		// A caller missing from a non-empty list is refused, named.
		{name: "unlisted caller", caller: "host3", service: "skarbiec", code: "caller_not_allowed",
			mention: []string{"host3", "skarbiec", "host2"}},
		// An unnamed caller cannot be on the list.
		{name: "unnamed caller", caller: "", service: "skarbiec", code: "caller_not_allowed",
			mention: []string{"skarbiec"}},
		// No directory entry: refused naming the service.
		{name: "absent", caller: "host1", service: "nothere", code: "not_found",
			mention: []string{"nothere"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := &countingLoader{doc: fleet()}
			r := &Resolver{Load: l.load, Caller: tc.caller}
			got, err := r.Resolve(context.Background(), tc.service)
			if tc.code == "" {
				if err != nil {
					t.Fatalf("Resolve: %v", err)
				}
				if got != tc.want {
					t.Fatalf("got %+v, want %+v", got, tc.want)
				}
				return
			}
			var coded refusal.Coded
			if !errors.As(err, &coded) || string(coded.RefusalCode()) != tc.code {
				t.Fatalf("err = %v, want refusal %s", err, tc.code)
			}
			for _, m := range tc.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not name %q", err, m)
				}
			}
		})
	}
}

func TestResolveURI(t *testing.T) {
	r := &Resolver{Load: (&countingLoader{doc: fleet()}).load, Caller: "host1"}
	got, err := r.Resolve(context.Background(), "stado://service/brama")
	if err != nil || got.String() != "127.0.1.2:8080" {
		t.Fatalf("got %v %v", got, err)
	}
	for _, bad := range []string{"stado://release/brama", "http://service/brama", "stado://service/", "stado://service/a/b", ""} {
		if _, err := ParseURI(bad); !errors.Is(err, ErrBadURI) {
			t.Errorf("ParseURI(%q) = %v, want ErrBadURI", bad, err)
		}
	}
}

func TestResolutionIsCachedForTheRefreshInterval(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	l := &countingLoader{doc: fleet()}
	r := &Resolver{Load: l.load, Caller: "host1", Now: func() time.Time { return now }}
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if _, err := r.Resolve(ctx, "brama"); err != nil {
			t.Fatal(err)
		}
	}
	if l.reads != 1 {
		t.Fatalf("reads within the interval = %d, want 1", l.reads)
	}
	// The directory moves; the cache still says the old place until the
	// interval has passed.
	moved := fleet()
	moved.Directory[0].Port = 8081
	l.doc = moved
	now = now.Add(4 * time.Second)
	if got, _ := r.Resolve(ctx, "brama"); got.Port != 8080 {
		t.Fatalf("port within interval = %d, want the cached 8080", got.Port)
	}
	now = now.Add(2 * time.Second)
	if got, _ := r.Resolve(ctx, "brama"); got.Port != 8081 {
		t.Fatalf("port after interval = %d, want 8081", got.Port)
	}
	if r.RefreshSeconds() != 5 {
		t.Fatalf("RefreshSeconds = %d", r.RefreshSeconds())
	}
}

func TestFailedRefreshKeepsTheLastDirectory(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	l := &countingLoader{doc: fleet()}
	r := &Resolver{Load: l.load, Caller: "host1", Now: func() time.Time { return now }}
	ctx := context.Background()
	if _, err := r.Resolve(ctx, "brama"); err != nil {
		t.Fatal(err)
	}
	l.err = errors.New("store down")
	now = now.Add(10 * time.Second)
	if got, err := r.Resolve(ctx, "brama"); err != nil || got.Port != 8080 {
		t.Fatalf("after failed refresh: %v %v", got, err)
	}
	// Nothing ever read: the error is the caller's.
	r2 := &Resolver{Load: l.load, Caller: "host1"}
	if _, err := r2.Resolve(ctx, "brama"); err == nil || !strings.Contains(err.Error(), "store down") {
		t.Fatalf("first read error = %v", err)
	}
}

// A service on several hosts resolves to the caller's own copy first, at the
// address its entry declares (loopback included); other callers get the
// first entry.
func TestServiceOnSeveralHostsResolvesToTheCallersOwnCopyFirst(t *testing.T) {
	doc := fleet()
	doc.Directory = append(doc.Directory,
		registry.DirectoryEntry{Service: "brama", Host: "host1", Address: "127.0.0.1", Port: 8080})
	got, err := resolveIn(doc, "brama", "host1")
	if err != nil {
		t.Fatal(err)
	}
	if want := (Endpoint{Service: "brama", Host: "host1", Address: "127.0.0.1", Port: 8080, Choice: ChoiceOwnHost}); got != want {
		t.Fatalf("from host1: %+v, want %+v", got, want)
	}
	got, err = resolveIn(doc, "brama", "host3")
	if err != nil {
		t.Fatal(err)
	}
	if got.Host != "host2" || got.Address != "127.0.1.2" {
		t.Fatalf("from host3: %+v, want host2's entry", got)
	}
}

// severalHosts is brama on host1, host2 (only host1 may call it there) and
// host3 at a loopback address, plus one entry without a port on host4.
func severalHosts() *registry.Document {
	doc := fleet()
	doc.Directory = []registry.DirectoryEntry{
		{Service: "brama", Host: "host1", Port: 8080},
		{Service: "brama", Host: "host2", Port: 8080, Callers: []string{"host1"}},
		{Service: "brama", Host: "host3", Address: "127.0.0.1", Port: 8081},
		{Service: "brama", Host: "host4", Port: 0},
		{Service: "solo", Host: "host2", Port: 0},
		{Service: "closed", Host: "host2", Port: 1, Callers: []string{"host1"}},
		{Service: "closed", Host: "host3", Port: 1, Callers: []string{"host1"}},
	}
	doc.Targets = append(doc.Targets, registry.Target{Name: "host4", OS: "linux"}, registry.Target{Name: "host5", OS: "linux"})
	return doc
}

// answering builds the beacons' evidence: the hosts listed answer brama.
func answering(hosts ...string) Answers {
	return func(service, host string) bool { return service == "brama" && slices.Contains(hosts, host) }
}

// The resolver's choice among a service's entries: the caller's own host,
// then the first host whose fresh beacon reads the answer successful, then
// directory order; entries the caller may not call or without a port are
// never chosen.
func TestChoiceAmongSeveralHostsFollowsTheDocumentedRule(t *testing.T) {
	cases := []struct {
		name    string
		caller  string
		answers Answers
		service string
		host    string // the chosen host; "" when refused
		choice  string
		code    refusal.Code
	}{
		// own host first, even when another host is the one answering
		{name: "own host", caller: "host3", answers: answering("host1"), service: "brama", host: "host3", choice: ChoiceOwnHost},
		// no own entry: the first answering host in directory order
		{name: "answering", caller: "host5", answers: answering("host3"), service: "brama", host: "host3", choice: ChoiceAnswering},
		// an answering host the caller may not call is passed over
		{name: "answering but not a caller", caller: "host5", answers: answering("host2", "host3"), service: "brama", host: "host3", choice: ChoiceAnswering},
		// the same host is allowed for a listed caller, and comes first
		{name: "answering listed caller", caller: "host1", answers: answering("host2"), service: "brama", host: "host1", choice: ChoiceOwnHost},
		// no evidence at all: the first entry the caller may call
		{name: "no evidence", caller: "host5", service: "brama", host: "host1", choice: ChoiceDirectory},
		// evidence that nobody answers: the same
		{name: "nobody answers", caller: "host5", answers: answering(), service: "brama", host: "host1", choice: ChoiceDirectory},
		// an own entry without a port is not a candidate
		{name: "own entry without a port", caller: "host4", answers: answering("host3"), service: "brama", host: "host3", choice: ChoiceAnswering},
		// the only entry has no port
		{name: "no port", caller: "host1", service: "solo", code: refusal.Unreadable},
		// every entry lists callers without this one
		{name: "no entry callable", caller: "host5", service: "closed", code: refusal.CallerNotAllowed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := choose(severalHosts(), tc.service, tc.caller, tc.answers)
			if tc.code != "" {
				if c, _ := refusal.CodeOf(err); c != tc.code {
					t.Fatalf("got %+v, %v; want refusal %s", got, err, tc.code)
				}
				return
			}
			if err != nil || got.Host != tc.host || got.Choice != tc.choice {
				t.Fatalf("got %+v, %v; want host %s (%s)", got, err, tc.host, tc.choice)
			}
		})
	}
}

// The evidence is read with the document, kept with it for the refresh
// interval, and kept when a later read of it fails.
func TestAnswersAreReadWithTheDirectory(t *testing.T) {
	now := time.Unix(1000, 0)
	l := &countingLoader{doc: severalHosts()}
	reads, fail := 0, false
	who := "host2x"
	r := &Resolver{Load: l.load, Caller: "host5", Now: func() time.Time { return now },
		LoadAnswers: func(context.Context) (Answers, error) {
			reads++
			if fail {
				return nil, errors.New("beacons unreadable")
			}
			return answering(who), nil
		}}
	resolve := func() Endpoint {
		t.Helper()
		ep, err := r.Resolve(context.Background(), "brama")
		if err != nil {
			t.Fatal(err)
		}
		return ep
	}
	who = "host3"
	if ep := resolve(); ep.Host != "host3" || reads != 1 {
		t.Fatalf("first: %+v after %d reads", ep, reads)
	}
	who = "host1"
	if ep := resolve(); ep.Host != "host3" || reads != 1 {
		t.Fatalf("within the interval: %+v after %d reads, want the kept evidence", ep, reads)
	}
	now = now.Add(6 * time.Second)
	fail = true
	if ep := resolve(); ep.Host != "host3" || reads != 2 {
		t.Fatalf("failed read: %+v after %d reads, want the last evidence", ep, reads)
	}
	now = now.Add(6 * time.Second)
	fail = false
	if ep := resolve(); ep.Host != "host1" || ep.Choice != ChoiceAnswering {
		t.Fatalf("after a good read: %+v", ep)
	}
}

// The wait a request records names the exact host the resolver chose, and
// a request held on one host's copy does not refuse requests to another's.
func TestWaitsNameTheChosenHostAndHoldingIsPerHost(t *testing.T) {
	release := make(chan struct{})
	hold := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hold.Close()
	defer close(release)
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") }))
	defer ok.Close()
	port := func(s *httptest.Server) int { return s.Listener.Addr().(*net.TCPAddr).Port }

	now := time.Unix(1000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	doc := fleet()
	doc.ServiceResolver.RefreshSeconds = 0 // read every call, so the evidence follows each change
	doc.Directory = []registry.DirectoryEntry{
		{Service: "brama", Host: "host1", Address: "127.0.0.1", Port: port(ok)},
		{Service: "brama", Host: "host3", Address: "127.0.0.1", Port: port(hold)},
	}
	who := "host3"
	rec := &Recorder{Now: clock}
	tr := &Transport{Recorder: rec, Resolver: &Resolver{
		Load: func(context.Context) (*registry.Document, error) { return doc, nil }, Caller: "host2", Now: clock,
		LoadAnswers: func(context.Context) (Answers, error) {
			mu.Lock()
			defer mu.Unlock()
			return answering(who), nil
		}}}
	c := &http.Client{Transport: tr}
	go func() {
		if resp, err := c.Get("stado://service/brama/work"); err == nil {
			resp.Body.Close()
		}
	}()
	var waits []Wait
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if waits = rec.Snapshot(); len(waits) == 1 && waits[0].Phase == PhaseAnswer {
			break
		}
	}
	if len(waits) != 1 || waits[0].Host != "host3" || waits[0].Endpoint != hold.Listener.Addr().String() {
		t.Fatalf("waits %+v, want one on host3 at %s", waits, hold.Listener.Addr())
	}
	// host3 now holds the request past the bound, and its beacon no longer
	// reads it answering: the next request goes to host1 and is not refused
	mu.Lock()
	now, who = now.Add(time.Minute), "host1"
	mu.Unlock()
	doc.ServiceResolver.RefreshSeconds = 5
	if _, n, held := rec.HeldOn("brama", "host3", 5*time.Second); !held || n != 1 {
		t.Fatalf("host3 holds %d, want 1", n)
	}
	resp, err := c.Get("stado://service/brama/work")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "ok" {
		t.Fatalf("request to host1 while host3 holds: %d %s", resp.StatusCode, body)
	}
}
