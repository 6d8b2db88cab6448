package repair

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/alert"
	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/channel/local"
	"github.com/wisent/stado/register"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/resolver"
)

const (
	observer = "host1" // the host whose resolver records the waits
	serving  = "host2" // the host that serves the standing service
)

// peerCatalog is the shipped catalog with a held product whose answering
// declares repair, a product without a question, and three steps.
func peerCatalog(t *testing.T, marker, repair string) *catalog.Catalog {
	t.Helper()
	doc := fmt.Sprintf(`version: 1
products:
  - name: peer-hold
    units: {systemd: stado-peer-hold.service}
    program: /usr/local/bin/stado-answering-fixture
    answering: {method: GET, path: /work, repair: %s}
  - name: peer-quiet
    units: {systemd: stado-peer-quiet.service}
    program: /usr/local/bin/stado-answering-fixture
steps:
  unmark:
    linux: {argv: [/bin/rm, -f, %q], timeout_seconds: 5}
  noop:
    linux: {argv: [/bin/true], timeout_seconds: 5}
  fail:
    linux: {argv: [/bin/sh, -c, "echo keyring still locked >&2; exit 3"], timeout_seconds: 5}
`, repair, marker)
	c, err := catalog.ValidateSite([]byte(doc), "peer test site catalog")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// peerRig is host1 with a resolver recorder and publisher, its peer
// contributor, and host2's fixtures behind this machine's channel/local end.
type peerRig struct {
	t      *testing.T
	clock  *clock
	home   string
	marker string
	mgr    *fixtureManager
	host   *local.Host
	doc    *registry.Document
	peer   *Peer
	rec    *resolver.Recorder
	pub    *resolver.Publisher
	n      int64
}

func newPeerRig(t *testing.T, refresh int, repair string) *peerRig {
	t.Helper()
	home := t.TempDir()
	r := &peerRig{t: t, clock: newClock(), home: home, marker: home + "/hold.marker"}
	if err := os.WriteFile(r.marker, []byte("held"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.mgr = &fixtureManager{fixtures: map[string]*fixture{}, refuse: map[string]error{}}
	cat := peerCatalog(t, r.marker, repair)
	r.peer = &Peer{
		ListPath: resolver.ListPath(home),
		Catalog:  cat,
		Register: register.Home(home),
		Now:      r.clock.Now,
	}
	// this machine's end of the channel stands in for the SSH client of
	// host2: it runs the step and the restart here; no other host answers
	r.host = testHost(func() *catalog.Catalog { return r.peer.Catalog }, r.mgr, r.clock.Now)
	r.peer.Connect = func(t registry.Target) channel.Host {
		if t.Name != serving {
			return nil
		}
		return r.host
	}
	r.doc = &registry.Document{
		Version:         1,
		ServiceResolver: registry.ServiceResolver{RefreshSeconds: refresh},
		Targets: []registry.Target{
			{Name: observer, OS: registry.OSLinux, SSH: registry.SSH{Address: "127.0.0.1"}},
			{Name: serving, OS: registry.OSLinux, SSH: registry.SSH{Address: "127.0.0.1"}},
		},
	}
	r.rec = &resolver.Recorder{Now: r.clock.Now}
	r.pub = &resolver.Publisher{Path: resolver.ListPath(home), Recorder: r.rec, RefreshSeconds: func() int { return refresh }, Now: r.clock.Now}
	return r
}

func (r *peerRig) setRepair(repair string) {
	cat := peerCatalog(r.t, r.marker, repair)
	r.peer.Catalog = cat
}

// declare puts service (a product) on host with a fixture of mode.
func (r *peerRig) declare(name, product, host, mode string) *fixture {
	f := startFixture(r.t, mode, r.marker)
	unit := "stado-peer-" + name + ".service"
	r.mgr.mu.Lock()
	r.mgr.fixtures[unit] = f
	r.mgr.mu.Unlock()
	r.doc.Directory = append(r.doc.Directory, registry.DirectoryEntry{Service: name, Host: host, Port: f.port})
	t, _ := r.doc.Target(host)
	t.Services = append(t.Services, registry.Service{Name: name, Unit: unit, Product: product})
	return f
}

// wait records a request to service on host, moved to phase answer when
// sent is set, as a running resolver records it.
func (r *peerRig) wait(service, host string, sent bool) *resolver.Pending {
	p := r.rec.Begin(resolver.Wait{Service: service, Host: host, Endpoint: "127.0.0.1:1", Client: "127.0.0.1:40000", RequestLine: "GET /work HTTP/1.1"})
	if sent {
		p.Sent()
	}
	return p
}

// pass publishes the waiting list and runs one peer pass of host1. When
// that pass started recoveries (they run off the pass), pass waits for
// them and returns the next pass, at the same clock reading, which
// carries their outcomes.
func (r *peerRig) pass() *beacon.Beacon {
	r.t.Helper()
	if err := r.pub.Publish(); err != nil {
		r.t.Fatal(err)
	}
	b := r.passOnly()
	for _, blk := range b.PeerRecoveries {
		if len(blk.Recovery) > 0 && peerRecovery(r.t, blk).State == register.Running {
			r.peer.Wait()
			return r.passOnly()
		}
	}
	return b
}

// passOnly runs a peer pass on the list as it is.
func (r *peerRig) passOnly() *beacon.Beacon {
	r.t.Helper()
	r.n++
	t, _ := r.doc.Target(observer)
	b := &beacon.Beacon{Kind: beacon.Kind, Host: observer, Units: []beacon.UnitReport{}}
	r.peer.Contribute(context.Background(), &beacon.Pass{Number: r.n, At: r.clock.Now(), Host: observer, Document: r.doc, Target: t, Beacon: b})
	return b
}

func (r *peerRig) rows() []register.Recovery {
	r.t.Helper()
	rows, err := r.peer.Register.Read()
	if err != nil {
		r.t.Fatal(err)
	}
	return rows
}

func onlyBlock(t *testing.T, b *beacon.Beacon) beacon.PeerRecovery {
	t.Helper()
	if len(b.PeerRecoveries) != 1 {
		t.Fatalf("peer_recoveries = %+v, want one block", b.PeerRecoveries)
	}
	return b.PeerRecoveries[0]
}

func peerRecovery(t *testing.T, b beacon.PeerRecovery) register.Recovery {
	t.Helper()
	if len(b.Recovery) == 0 {
		t.Fatalf("block %+v carries no recovery", b)
	}
	var rec register.Recovery
	if err := json.Unmarshal(b.Recovery, &rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

func TestPeerRepairsAndRestartsAServiceHoldingItsRequestsThroughTheProxy(t *testing.T) {
	r := newPeerRig(t, 2, "[unmark]")
	f := r.declare("brama", "peer-hold", serving, modeHold)
	// The serving host's command alert belongs on the serving host: this
	// host process, recovering it as a peer, never runs it.
	planted := filepath.Join(t.TempDir(), "planted")
	st, _ := r.doc.Target(serving)
	st.Alerts = []registry.AlertChannel{{Name: "pager", Command: &registry.CommandAlert{Argv: []string{"/bin/sh", "-c", "touch " + planted}}}}
	tr := &resolver.Transport{
		Resolver: &resolver.Resolver{Load: func(context.Context) (*registry.Document, error) { return r.doc, nil }, Caller: observer, Now: r.clock.Now},
		Recorder: r.rec,
	}
	proxy := httptest.NewServer((&resolver.Proxy{Service: "brama", Transport: tr}).Handler())
	t.Cleanup(proxy.Close)
	held := make(chan int, 1)
	go func() {
		resp, err := http.Get(proxy.URL + "/v1/chat/completions")
		if err != nil {
			held <- -1
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		held <- resp.StatusCode
	}()
	deadline := time.Now().Add(10 * time.Second)
	for s := r.rec.Snapshot(); len(s) != 1 || s[0].Phase != resolver.PhaseAnswer; s = r.rec.Snapshot() {
		if time.Now().After(deadline) {
			t.Fatalf("no held wait: %+v", s)
		}
		time.Sleep(5 * time.Millisecond)
	}
	accepted := r.rec.Snapshot()[0].AcceptedAt

	// Within the bound: waiting, not standing.
	r.clock.Advance(2 * time.Second)
	if b := r.pass(); len(b.PeerRecoveries) != 0 {
		t.Fatalf("at the bound: %+v", b.PeerRecoveries)
	}
	r.clock.Advance(time.Second)
	blk := onlyBlock(t, r.pass())
	var oldest PeerOldest
	_ = json.Unmarshal(blk.Oldest, &oldest)
	if blk.Service != "brama" || blk.Host != serving || blk.Held != 1 || blk.BoundSeconds != 2 || blk.WaitedSeconds != 3 ||
		!blk.Since.Equal(accepted) || oldest.RequestLine != "GET /v1/chat/completions HTTP/1.1" || !strings.HasPrefix(oldest.Client, "127.0.0.1:") ||
		oldest.Endpoint != fmt.Sprintf("127.0.0.1:%d", f.port) || blk.AlreadyRecovered || blk.NotRecovered != "" {
		t.Fatalf("block = %+v oldest %+v", blk, oldest)
	}
	rec := peerRecovery(t, blk)
	if !rec.Complete || len(rec.Steps) != 1 || rec.Steps[0].Step != "unmark" || !rec.Steps[0].OK || rec.Restart == nil || !rec.Restart.OK || rec.ObservedBy != observer {
		t.Fatalf("recovery = %+v", rec)
	}
	if _, err := os.Stat(r.marker); !os.IsNotExist(err) {
		t.Fatalf("the repair step did not run: %v", err)
	}
	if n := f.restartCount(); n != 1 {
		t.Fatalf("restarts = %d", n)
	}
	rows := r.rows()
	if len(rows) != 1 || rows[0].ObservedBy != observer || rows[0].Host != serving || !rows[0].Since.Equal(accepted) ||
		rows[0].HeldRequests != 1 || rows[0].Declaration == nil || rows[0].Declaration.Path != "/work" || rows[0].Unit != "stado-peer-brama.service" {
		t.Fatalf("register = %+v", rows)
	}
	if _, err := os.Stat(planted); !os.IsNotExist(err) {
		t.Errorf("a peer recovery ran the serving host's command alert here: %v", err)
	}
	if a := rows[0].Alerts; len(a) != 1 || a[0] != (register.AlertOutcome{Channel: "pager", Type: "command", Answer: alert.NotRun, Cause: alert.CommandElsewhere}) {
		t.Errorf("alerts %+v, want the command channel not run, saying why", a)
	}
	// The held request ended (answered or cut by the restart); new requests
	// through the proxy are answered.
	<-held
	for s := r.rec.Snapshot(); len(s) != 0; s = r.rec.Snapshot() {
		if time.Now().After(deadline) {
			t.Fatalf("waits left: %+v", s)
		}
		time.Sleep(5 * time.Millisecond)
	}
	resp, err := http.Get(proxy.URL + "/v1/chat/completions")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("after the recovery: %d", resp.StatusCode)
	}
	if b := r.pass(); len(b.PeerRecoveries) != 0 {
		t.Fatalf("after the recovery the list still stands: %+v", b.PeerRecoveries)
	}
}

func TestPeerDoesNotActOnWhatIsNotAStanding(t *testing.T) {
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		setup func(r *peerRig)
	}{
		// Still opening its channel: the host or its sshd does not
		// answer, not the service.
		{"phase open", func(r *peerRig) { r.wait("brama", serving, false) }},
		// This host's own service is the answering probe's business.
		{"own service", func(r *peerRig) {
			r.declare("mine", "peer-hold", observer, modeNever)
			r.wait("mine", observer, true)
		}},
		// Younger than the bound: still waiting.
		{"younger than the bound", func(r *peerRig) {
			r.wait("brama", serving, true)
			r.clock.Advance(1900 * time.Millisecond) // waited 1.9 s of 2
		}},
		// The resolver that published the list no longer runs.
		{"publisher gone", func(r *peerRig) {
			r.wait("brama", serving, true)
			r.pub.PID = gone.ProcessState.Pid()
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newPeerRig(t, 2, "[unmark]")
			f := r.declare("brama", "peer-hold", serving, modeNever)
			tc.setup(r)
			if tc.name != "younger than the bound" {
				r.clock.Advance(10 * time.Second)
			}
			b := r.pass()
			if len(b.PeerRecoveries) != 0 {
				t.Fatalf("peer_recoveries = %+v, want none", b.PeerRecoveries)
			}
			if n := f.restartCount(); n != 0 {
				t.Fatalf("restarted %d times", n)
			}
			if _, err := os.Stat(r.marker); err != nil {
				t.Fatalf("a repair step ran: %v", err)
			}
			if rows := r.rows(); len(rows) != 0 {
				t.Fatalf("register = %+v", rows)
			}
		})
	}
}

func TestUndeclaredStandingIsNotRecoveredWithItsCause(t *testing.T) {
	cases := []struct {
		name    string
		service string
		setup   func(r *peerRig)
		reason  string
	}{
		// Neither the catalog nor the registry knows it.
		{"no such service", "ghost", func(r *peerRig) {}, `the catalog has no service "ghost"`},
		// The product declares no answering question.
		{"no question", "quiet", func(r *peerRig) { r.declare("quiet", "peer-quiet", serving, modeNever) },
			"the catalog declares no answering question for peer-quiet"},
		// The catalog asks the question, but host2 declares no unit for it.
		{"no unit on that host", "peer-hold", func(r *peerRig) {}, "the registry declares no unit for peer-hold on host2"},
		// The register holds a line that is not a recovery.
		{"register unreadable", "brama", func(r *peerRig) {
			r.declare("brama", "peer-hold", serving, modeNever)
			if err := os.MkdirAll(r.home+"/.stado", 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(r.peer.Register.Path, []byte("not a recovery\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "the register cannot be read: " + "%s:1: not a recovery"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newPeerRig(t, 2, "[unmark]")
			tc.setup(r)
			r.wait(tc.service, serving, true)
			r.clock.Advance(10 * time.Second)
			blk := onlyBlock(t, r.pass())
			want := tc.reason
			if strings.Contains(want, "%s") {
				want = fmt.Sprintf(want, r.peer.Register.Path)
			}
			if !strings.HasPrefix(blk.NotRecovered, want) || len(blk.Recovery) != 0 || blk.Held != 1 || blk.Service != tc.service {
				t.Fatalf("block = %+v, want not_recovered %q", blk, want)
			}
			if _, err := os.Stat(r.marker); err != nil {
				t.Fatalf("a repair step ran: %v", err)
			}
		})
	}
}

func TestMalformedWaitingListIsUnreadableNamingTheFile(t *testing.T) {
	r := newPeerRig(t, 2, "[unmark]")
	path := resolver.ListPath(r.home)
	if err := os.MkdirAll(r.home+"/.stado", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"kind":"stado.resolver.waiting","version":1,"publishers":[{"pid":`), 0o600); err != nil {
		t.Fatal(err)
	}
	blk := onlyBlock(t, r.passOnly())
	if !strings.Contains(blk.Unreadable, path) || len(blk.Recovery) != 0 {
		t.Fatalf("block = %+v, want unreadable naming %s", blk, path)
	}
}

func TestSameOldestRequestIsAlreadyRecoveredUntilTheDeclarationChanges(t *testing.T) {
	r := newPeerRig(t, 2, "[unmark]")
	f := r.declare("brama", "peer-hold", serving, modeNever)
	// A request held by something the restart does not end (a stranded
	// child keeping the connection): the same oldest request stands on.
	r.wait("brama", serving, true)
	r.clock.Advance(3 * time.Second)
	first := onlyBlock(t, r.pass())
	if rec := peerRecovery(t, first); !rec.Complete || first.AlreadyRecovered {
		t.Fatalf("first pass: %+v", first)
	}
	r.clock.Advance(time.Second)
	second := onlyBlock(t, r.pass())
	if !second.AlreadyRecovered || peerRecovery(t, second).ObservedBy != observer {
		t.Fatalf("second pass: %+v, want already_recovered with the record", second)
	}
	if n := f.restartCount(); n != 1 {
		t.Fatalf("restarts after two passes = %d, want 1", n)
	}
	// The owner edits the repair steps: the record cannot prove the
	// current declaration, so the peer acts again, once.
	r.setRepair("[noop, unmark]")
	r.clock.Advance(time.Second)
	third := onlyBlock(t, r.pass())
	rec := peerRecovery(t, third)
	if third.AlreadyRecovered || !rec.Complete || len(rec.Steps) != 2 || rec.Steps[0].Step != "noop" {
		t.Fatalf("after the edit: %+v %+v", third, rec)
	}
	r.clock.Advance(time.Second)
	if fourth := onlyBlock(t, r.pass()); !fourth.AlreadyRecovered {
		t.Fatalf("fourth pass: %+v", fourth)
	}
	if n := f.restartCount(); n != 2 {
		t.Fatalf("restarts = %d, want 2", n)
	}
	// A register row without its declaration snapshot (an older stado)
	// proves nothing: a new process with that register acts again.
	rows := r.rows()
	rows[len(rows)-1].Declaration = nil
	os.Remove(r.peer.Register.Path)
	for _, row := range rows {
		if err := r.peer.Register.Append(row); err != nil {
			t.Fatal(err)
		}
	}
	r.peer.memo = nil
	if fifth := onlyBlock(t, r.pass()); fifth.AlreadyRecovered || !peerRecovery(t, fifth).Complete {
		t.Fatalf("with an old row: %+v", fifth)
	}
	if n := f.restartCount(); n != 3 {
		t.Fatalf("restarts = %d, want 3", n)
	}
}

func TestANewOldestRequestIsANewStanding(t *testing.T) {
	r := newPeerRig(t, 2, "[noop]")
	f := r.declare("brama", "peer-hold", serving, modeNever)
	w := r.wait("brama", serving, true)
	r.clock.Advance(3 * time.Second)
	r.pass()
	w.Done() // the restart ended it
	r.wait("brama", serving, true)
	r.clock.Advance(3 * time.Second)
	blk := onlyBlock(t, r.pass())
	if blk.AlreadyRecovered || !peerRecovery(t, blk).Complete {
		t.Fatalf("new standing: %+v", blk)
	}
	if n := f.restartCount(); n != 2 || len(r.rows()) != 2 {
		t.Fatalf("restarts %d rows %d, want 2 and 2", n, len(r.rows()))
	}
}

func TestRefusedStepOrRestartIsRetriedNextPass(t *testing.T) {
	r := newPeerRig(t, 2, "[fail]")
	f := r.declare("brama", "peer-hold", serving, modeNever)
	r.wait("brama", serving, true)
	r.clock.Advance(3 * time.Second)
	rec := peerRecovery(t, onlyBlock(t, r.pass()))
	if rec.Complete || rec.Steps[0].OK || rec.Steps[0].Code != CodeStepFailed {
		t.Fatalf("first: %+v", rec)
	}
	r.clock.Advance(time.Second)
	again := onlyBlock(t, r.pass())
	if again.AlreadyRecovered || f.restartCount() != 2 {
		t.Fatalf("second: %+v restarts %d, want a retry", again, f.restartCount())
	}
	// A refused restart is retried too.
	r.setRepair("[]")
	r.mgr.mu.Lock()
	r.mgr.refuse["stado-peer-brama.service"] = fmt.Errorf("job failed")
	r.mgr.mu.Unlock()
	r.clock.Advance(time.Second)
	if rec := peerRecovery(t, onlyBlock(t, r.pass())); rec.Complete || rec.Restart.OK {
		t.Fatalf("refused restart: %+v", rec)
	}
	r.mgr.mu.Lock()
	delete(r.mgr.refuse, "stado-peer-brama.service")
	r.mgr.mu.Unlock()
	r.clock.Advance(time.Second)
	if rec := peerRecovery(t, onlyBlock(t, r.pass())); !rec.Complete {
		t.Fatalf("retried restart: %+v", rec)
	}
	if len(r.rows()) != 4 {
		t.Fatalf("rows = %d, want 4 attempts", len(r.rows()))
	}
}

func TestFailedAppendIsARecordingRefusalKeptForTheSameOldestRequest(t *testing.T) {
	r := newPeerRig(t, 2, "[noop]")
	f := r.declare("brama", "peer-hold", serving, modeNever)
	regHome := t.TempDir()
	r.peer.Register = register.Home(regHome)
	readOnlyDir(t, regHome+"/.stado")
	r.wait("brama", serving, true)
	r.clock.Advance(3 * time.Second)
	first := onlyBlock(t, r.pass())
	if first.RecordingRefusal == nil || !strings.HasPrefix(first.RecordingRefusal.File, regHome) || first.RecordingRefusal.Op == "" {
		t.Fatalf("first: %+v", first)
	}
	if rec := peerRecovery(t, first); !rec.Restart.OK {
		t.Fatalf("the observed restart was lost: %+v", rec)
	}
	r.clock.Advance(time.Second)
	second := onlyBlock(t, r.pass())
	if second.RecordingRefusal == nil || second.AlreadyRecovered || len(second.Recovery) == 0 {
		t.Fatalf("second: %+v, want the retained recording refusal", second)
	}
	if n := f.restartCount(); n != 1 {
		t.Fatalf("restarts = %d, want 1", n)
	}
}
