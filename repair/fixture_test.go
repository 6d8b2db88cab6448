package repair

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wisent/stado/alert"
	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/channel/local"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/register"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/units"
)

// Fixture modes: how a fixture service answers its question.
const (
	modeNever = "never" // accepts and never writes a byte
	modeOK    = "ok"    // answers 200 at once
	mode503   = "503"   // answers 503 at once with a diagnostic body
	modeHold  = "hold"  // holds every request while its marker file exists
)

// fixture is a real HTTP listener on 127.0.0.1 that a test Manager can
// "restart": close every connection and listen again on the same port.
type fixture struct {
	t      testing.TB
	marker string

	mu       sync.Mutex
	mode     string
	srv      *http.Server
	port     int
	open     int // connections open now
	restarts int
	stop     chan struct{}
}

func startFixture(t testing.TB, mode, marker string) *fixture {
	t.Helper()
	f := &fixture{t: t, mode: mode, marker: marker}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.port = ln.Addr().(*net.TCPAddr).Port
	f.serve(ln)
	t.Cleanup(f.close)
	return f
}

func (f *fixture) setMode(m string) { f.mu.Lock(); f.mode = m; f.mu.Unlock() }

func (f *fixture) serve(ln net.Listener) {
	stop := make(chan struct{})
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { f.handle(w, r, stop) }),
		ConnState: func(_ net.Conn, s http.ConnState) {
			f.mu.Lock()
			defer f.mu.Unlock()
			switch s {
			case http.StateNew:
				f.open++
			case http.StateClosed, http.StateHijacked:
				f.open--
			}
		},
	}
	f.mu.Lock()
	f.srv, f.stop = srv, stop
	f.mu.Unlock()
	go srv.Serve(ln)
}

func (f *fixture) handle(w http.ResponseWriter, r *http.Request, stop chan struct{}) {
	f.mu.Lock()
	mode := f.mode
	f.mu.Unlock()
	// read the body, so the server notices when the client goes away
	io.Copy(io.Discard, r.Body)
	switch mode {
	case modeOK:
		fmt.Fprintln(w, `{"ok":true}`)
	case mode503:
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, "vault sealed: canary item unreadable")
	case modeHold:
		for {
			if _, err := os.Stat(f.marker); errors.Is(err, os.ErrNotExist) {
				fmt.Fprintln(w, `{"ok":true}`)
				return
			}
			select {
			case <-r.Context().Done():
				return
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	default: // never: hold until the connection or the process ends
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}
}

// restart drops every connection and listens again on the same port: a
// new process as far as a client can tell.
func (f *fixture) restart() error {
	f.mu.Lock()
	srv, stop := f.srv, f.stop
	f.restarts++
	f.mu.Unlock()
	close(stop)
	srv.Close()
	var ln net.Listener
	var err error
	for i := 0; i < 50; i++ {
		if ln, err = net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", f.port)); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	f.serve(ln)
	return nil
}

func (f *fixture) close() {
	f.mu.Lock()
	srv, stop := f.srv, f.stop
	f.srv = nil
	f.mu.Unlock()
	if srv != nil {
		close(stop)
		srv.Close()
	}
}

func (f *fixture) restartCount() int { f.mu.Lock(); defer f.mu.Unlock(); return f.restarts }
func (f *fixture) openConns() int    { f.mu.Lock(); defer f.mu.Unlock(); return f.open }

// fixtureManager is the units.Manager behind Local in unit tests: its
// Restart restarts the fixture serving a unit (systemd runs only in the
// testbed, where the journey uses the real one). Other methods are not
// used by repair and panic through the nil embedded interface.
type fixtureManager struct {
	units.Manager
	mu       sync.Mutex
	fixtures map[string]*fixture
	refuse   map[string]error
}

func (m *fixtureManager) Restart(_ context.Context, unit string) error {
	m.mu.Lock()
	f, refuse := m.fixtures[unit], m.refuse[unit]
	m.mu.Unlock()
	if refuse != nil {
		return refuse
	}
	if f == nil {
		return &units.NotLoadedError{Unit: unit}
	}
	return f.restart()
}

func (m *fixtureManager) Show(_ context.Context, unit string) (units.Verdict, error) {
	m.mu.Lock()
	f := m.fixtures[unit]
	m.mu.Unlock()
	if f == nil {
		return units.Verdict{Unit: unit, State: units.StateMissing}, nil
	}
	return units.Verdict{Unit: unit, State: units.StateActive, PID: 1000 + f.restartCount()}, nil
}

// clock is a test clock advanced by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)} }
func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}
func (c *clock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// siteCatalog is the shipped catalog with the fixture products and steps.
func siteCatalog(t testing.TB, marker string, extra string) *catalog.Catalog {
	t.Helper()
	doc := fmt.Sprintf(`version: 1
products:
  - name: fixture-hold
    units: {systemd: stado-test-hold.service}
    program: /usr/local/bin/stado-answering-fixture
    answering: {method: GET, path: /work, repair: [unmark]}
  - name: fixture-never
    units: {systemd: stado-test-never.service}
    program: /usr/local/bin/stado-answering-fixture
    answering: {method: POST, path: /v1/chat/completions, body: {q: ping}, repair: []}
  - name: fixture-ok
    units: {systemd: stado-test-ok.service}
    program: /usr/local/bin/stado-answering-fixture
    answering: {method: GET, path: /ok}
  - name: fixture-503
    units: {systemd: stado-test-503.service}
    program: /usr/local/bin/stado-answering-fixture
    answering: {method: GET, path: /readyz}
  - name: fixture-fail
    units: {systemd: stado-test-fail.service}
    program: /usr/local/bin/stado-answering-fixture
    answering: {method: GET, path: /work, repair: [fail, unmark]}
%s
steps:
  unmark:
    linux: {argv: [/bin/rm, -f, %q], timeout_seconds: 5}
  fail:
    linux: {argv: [/bin/sh, -c, "echo keyring still locked >&2; exit 3"], timeout_seconds: 5}
`, extra, marker)
	c, err := catalog.ValidateSite([]byte(doc), "test site catalog")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// rig is one host with an answerer, its fixtures, a register and a webhook.
type rig struct {
	t       *testing.T
	clock   *clock
	a       *Answerer
	mgr     *fixtureManager
	doc     *registry.Document
	home    string
	marker  string
	hook    *webhook
	passNum int64
}

const rigHost = "h1"

// testHost is this machine's end of the channel as a host process gives it
// to repair (HostProcess.Self), without root: the repair steps of the
// catalog cat returns run by a local.StepRunner at the clock now, restarts
// through mgr for system units. A user-scope unit has no manager.
func testHost(cat func() *catalog.Catalog, mgr units.Manager, now func() time.Time) *local.Host {
	return &local.Host{GOOS: registry.OSLinux,
		Catalog: func(context.Context) (*catalog.Catalog, error) { return cat(), nil },
		RunStep: (&local.StepRunner{OS: registry.OSLinux, Now: now}).Run,
		Manager: func(_ context.Context, scope string) (units.Manager, func(), error) {
			if scope == registry.ScopeSystem && mgr != nil {
				return mgr, func() {}, nil
			}
			return nil, nil, refusal.New(refusal.NoManager, "no %s service manager", scope)
		}}
}

func newRig(t *testing.T, refresh int) *rig {
	t.Helper()
	home := t.TempDir()
	marker := home + "/hold.marker"
	if err := os.WriteFile(marker, []byte("held"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, clock: newClock(), home: home, marker: marker, hook: startWebhook(t)}
	r.mgr = &fixtureManager{fixtures: map[string]*fixture{}, refuse: map[string]error{}}
	cat := siteCatalog(t, marker, "")
	r.a = &Answerer{
		Catalog:  cat,
		Register: register.Home(home),
		Now:      r.clock.Now,
	}
	r.a.Host = testHost(func() *catalog.Catalog { return r.a.Catalog }, r.mgr, r.clock.Now)
	t.Cleanup(r.a.Close)
	r.doc = &registry.Document{
		Version:         1,
		ServiceResolver: registry.ServiceResolver{RefreshSeconds: refresh},
		Targets: []registry.Target{{
			Name: rigHost, OS: registry.OSLinux, SSH: registry.SSH{Address: "127.0.0.1"},
			Alerts: []registry.AlertChannel{{Name: "hook", Webhook: &registry.WebhookAlert{URL: r.hook.url}}},
		}},
	}
	return r
}

// add declares a service of product on a fixture of mode.
func (r *rig) add(name, product, mode string) *fixture {
	f := startFixture(r.t, mode, r.marker)
	unit := "stado-test-" + name + ".service"
	r.mgr.mu.Lock()
	r.mgr.fixtures[unit] = f
	r.mgr.mu.Unlock()
	r.doc.Directory = append(r.doc.Directory, registry.DirectoryEntry{Service: name, Host: rigHost, Port: f.port})
	r.doc.Targets[0].Services = append(r.doc.Targets[0].Services, registry.Service{Name: name, Unit: unit, Product: product, Program: "/usr/local/bin/" + name})
	return f
}

// pass runs one pass of the answerer and returns the beacon.
func (r *rig) pass() *beacon.Beacon {
	r.t.Helper()
	r.passNum++
	tgt := &r.doc.Targets[0]
	b := &beacon.Beacon{Kind: beacon.Kind, Host: rigHost, Units: []beacon.UnitReport{}}
	for _, s := range tgt.Services {
		b.Units = append(b.Units, beacon.UnitReport{Service: s.Name, Unit: s.Unit, State: beacon.StateActive})
	}
	r.a.Contribute(context.Background(), &beacon.Pass{Number: r.passNum, At: r.clock.Now(), Host: rigHost, Document: r.doc, Target: tgt, Beacon: b})
	return b
}

// block returns service's answering block in b.
func block(t *testing.T, b *beacon.Beacon, service string) *beacon.Answering {
	t.Helper()
	for _, u := range b.Units {
		if u.Service == service {
			if u.Answering == nil {
				t.Fatalf("%s: no answering block", service)
			}
			return u.Answering
		}
	}
	t.Fatalf("no unit report for %s", service)
	return nil
}

// settle waits until the question in flight for service has finished.
func (r *rig) settle(service string) {
	r.t.Helper()
	r.a.mu.Lock()
	st := r.a.states[service]
	var pr *probe
	if st != nil {
		pr = st.probe
	}
	r.a.mu.Unlock()
	if pr == nil {
		r.t.Fatalf("%s: no question in flight", service)
	}
	select {
	case <-pr.done:
	case <-time.After(10 * time.Second):
		r.t.Fatalf("%s: the question did not finish within 10s", service)
	}
}

func (r *rig) recoveries() []register.Recovery {
	r.t.Helper()
	recs, err := register.Home(r.home).Read()
	if err != nil {
		r.t.Fatal(err)
	}
	return recs
}

func recoveryOf(t *testing.T, a *beacon.Answering) *register.Recovery {
	t.Helper()
	if len(a.Recovery) == 0 {
		t.Fatalf("block in state %s carries no recovery", a.State)
	}
	var rec register.Recovery
	if err := json.Unmarshal(a.Recovery, &rec); err != nil {
		t.Fatal(err)
	}
	return &rec
}

// webhook is a loopback alert receiver.
type webhook struct {
	url    string
	mu     sync.Mutex
	alerts []alert.Alert
	status int
}

func startWebhook(t *testing.T) *webhook {
	t.Helper()
	w := &webhook{status: 200}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		var al alert.Alert
		if err := json.NewDecoder(req.Body).Decode(&al); err != nil {
			rw.WriteHeader(400)
			return
		}
		w.mu.Lock()
		w.alerts = append(w.alerts, al)
		st := w.status
		w.mu.Unlock()
		rw.WriteHeader(st)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	w.url = "http://" + ln.Addr().String() + "/alerts"
	return w
}

func (w *webhook) received() []alert.Alert {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]alert.Alert(nil), w.alerts...)
}

func mustContain(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s %q does not name %q", what, s, sub)
		}
	}
}

func fmtInt(n int) string { return fmt.Sprint(n) }
