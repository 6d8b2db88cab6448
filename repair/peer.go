package repair

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/wisent/stado/alert"
	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/register"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/resolver"
	"github.com/wisent/stado/store"
)

// PeerOldest is the oldest held wait of a peer standing, as a beacon's
// peer_recoveries block carries it.
type PeerOldest struct {
	Client      string    `json:"client"`
	RequestLine string    `json:"request_line"`
	Endpoint    string    `json:"endpoint"`
	AcceptedAt  time.Time `json:"accepted_at"`
}

// Peer is the beacon contributor that recovers other hosts' services from
// the waits this host's resolvers record. Each pass it reads the host's
// waiting list; a service on another host that holds a request in phase
// answer (request sent, first byte awaited) longer than the fleet's
// service_resolver.refresh_seconds is standing, and Peer runs its declared
// repair steps and the restart on the host that serves it through that
// host's channel.Host (Connect: the SSH client in production, so that
// host's own stado process is not needed). Waits still opening their channel, waits on this host's own
// services and waits younger than the bound are never acted on.
//
// One standing (identified by its oldest held request) is acted on once:
// a later pass reports already_recovered only when the register (or this
// process's memory of a refused append) holds a complete attempt for the
// same oldest request, with the same unit and the same answering
// declaration as now. Otherwise it acts again; a refused step or restart
// is retried on the next pass.
//
// Recoveries run off the pass: Contribute starts an attempt in a goroutine
// of its own and returns at once, so a long repair step on another host
// never delays this host's own beacon. At most Concurrency attempts run at
// once; a standing found while all of them are busy is reported
// not_recovered (naming the cap) and considered again on the next pass.
// While an attempt runs, each pass carries it as a recovery in state
// running; the first pass after it ends carries its outcome (and, when it
// was complete and recorded, later passes read already_recovered from the
// register). An outcome whose standing ended meanwhile (the restart cut
// the held requests) is still carried once. Close ends the running
// attempts and waits for them. Safe for concurrent use.
type Peer struct {
	// ListPath is this host's waiting list (resolver.ListPath($HOME)).
	ListPath string
	// Catalog holds products and repair steps; nil means catalog.Shipped().
	Catalog *catalog.Catalog
	// LoadCatalog, when set, is read every pass (the shipped catalog with
	// the site's); when it fails the pass says so and uses Catalog.
	LoadCatalog func(context.Context) (*catalog.Catalog, error)
	// Connect reaches the serving host (the SSH client's Host in
	// production); it runs the steps and the restart. The host's target is
	// the pass's registry's. Nil refuses every attempt.
	Connect channel.Connector
	// Register receives every attempt, with observed_by set to this host.
	// nil keeps none (each attempt is then a recording refusal).
	Register *register.File
	// Alerter delivers an alert to the serving host's channels; nil means
	// the zero alert.Alerter. Only its webhooks are posted: its command
	// channels run only on the serving host (alert.Elsewhere).
	Alerter *alert.Alerter
	// Running says whether a waiting-list publisher still runs; nil means
	// resolver.Running.
	Running func(resolver.Publication) bool
	// Now is the clock; nil means time.Now.
	Now    func() time.Time
	Logger *slog.Logger
	// Concurrency caps the recoveries running at once; 0 or less means
	// DefaultPeerConcurrency.
	Concurrency int

	mu      sync.Mutex
	memo    map[standingKey]*peerMemo
	running map[standingKey]*register.Recovery // attempts in flight, as started
	base    context.Context                    // the attempts' context, ended by Close
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// DefaultPeerConcurrency is how many peer recoveries one observer runs at
// once unless told otherwise (stado host run --peer-recoveries).
const DefaultPeerConcurrency = 2

func (pr *Peer) concurrency() int {
	if pr.Concurrency > 0 {
		return pr.Concurrency
	}
	return DefaultPeerConcurrency
}

// Wait blocks until no recovery started by Contribute is running. Tests and
// Close use it; a pass never does.
func (pr *Peer) Wait() { pr.wg.Wait() }

// Close ends the running recoveries (their steps and restarts see their
// context cancelled) and waits for them.
func (pr *Peer) Close() {
	pr.mu.Lock()
	if pr.cancel != nil {
		pr.cancel()
	}
	pr.mu.Unlock()
	pr.wg.Wait()
}

var _ beacon.Contributor = (*Peer)(nil)

// standingKey names a service on a host.
type standingKey struct{ service, host string }

// peerMemo is this process's memory of its last finished attempt on one
// standing.
type peerMemo struct {
	oldest    string // identity of the oldest held request
	rec       register.Recovery
	recording *beacon.FileRefusal
	bound     float64
	held      int
	reported  bool // a pass has carried this outcome
}

// standing is one service on another host holding this host's requests.
type standing struct {
	key    standingKey
	oldest resolver.Wait
	ident  string
	held   int
}

func (pr *Peer) now() time.Time {
	if pr.Now != nil {
		return pr.Now()
	}
	return time.Now()
}

func (pr *Peer) logger() *slog.Logger {
	if pr.Logger != nil {
		return pr.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// Contribute implements beacon.Contributor: it adds one peer_recoveries
// block per standing, or one unreadable block for a list that cannot be
// read.
func (pr *Peer) Contribute(ctx context.Context, p *beacon.Pass) {
	if p.Document == nil {
		return
	}
	list, err := resolver.ReadList(pr.ListPath)
	if err != nil {
		p.Beacon.PeerRecoveries = append(p.Beacon.PeerRecoveries, beacon.PeerRecovery{Host: p.Host, Unreadable: err.Error()})
		return
	}
	running := pr.Running
	if running == nil {
		running = resolver.Running
	}
	now := pr.now().UTC()
	refresh := p.Document.ServiceResolver.RefreshSeconds
	bound := time.Duration(refresh) * time.Second
	found := map[standingKey]*standing{}
	for _, pub := range list.Live(running) {
		for _, w := range pub.Waits {
			if w.Phase != resolver.PhaseAnswer || w.Host == p.Host {
				continue
			}
			if refresh > 0 && now.Sub(w.AcceptedAt) <= bound {
				continue
			}
			k := standingKey{w.Service, w.Host}
			s := found[k]
			if s == nil {
				s = &standing{key: k}
				found[k] = s
			}
			s.held++
			if s.held == 1 || w.AcceptedAt.Before(s.oldest.AcceptedAt) {
				s.oldest = w
				s.ident = fmt.Sprintf("%d/%s/%d/%s", pub.PID, pub.Started, w.ID, w.AcceptedAt.Format(time.RFC3339Nano))
			}
		}
	}
	keys := make([]standingKey, 0, len(found))
	for k := range found {
		keys = append(keys, k)
	}
	sortKeys(keys)
	var blocks []beacon.PeerRecovery
	if len(keys) > 0 {
		cat := pr.catalog(ctx, p)
		blocks = make([]beacon.PeerRecovery, len(keys))
		for i, k := range keys {
			s := found[k]
			since := s.oldest.AcceptedAt
			blocks[i] = beacon.PeerRecovery{
				Service: k.service, Host: k.host, Since: &since,
				WaitedSeconds: now.Sub(since).Seconds(), BoundSeconds: bound.Seconds(), Held: s.held,
				Oldest: mustJSON(PeerOldest{Client: s.oldest.Client, RequestLine: s.oldest.RequestLine, Endpoint: s.oldest.Endpoint, AcceptedAt: since}),
			}
			if refresh <= 0 {
				blocks[i].Unreadable = "the registry declares no service_resolver.refresh_seconds, so no bound for a wait can be read"
				continue
			}
			pr.judge(ctx, p, cat, s, &blocks[i], now)
		}
	}
	p.Beacon.PeerRecoveries = append(p.Beacon.PeerRecoveries, blocks...)
	p.Beacon.PeerRecoveries = append(p.Beacon.PeerRecoveries, pr.endedOutcomes(found)...)
}

func sortKeys(keys []standingKey) {
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].service != keys[j].service {
			return keys[i].service < keys[j].service
		}
		return keys[i].host < keys[j].host
	})
}

// endedOutcomes are the blocks of finished attempts no pass carried yet
// whose standing is no longer seen (the restart ended the held requests),
// and of attempts still running on such a standing: each is carried once,
// the running ones until they end.
func (pr *Peer) endedOutcomes(found map[standingKey]*standing) []beacon.PeerRecovery {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	var keys []standingKey
	for k, m := range pr.memo {
		if _, ok := found[k]; !ok && !m.reported {
			keys = append(keys, k)
		}
	}
	for k := range pr.running {
		if _, ok := found[k]; !ok {
			keys = append(keys, k)
		}
	}
	sortKeys(keys)
	out := make([]beacon.PeerRecovery, 0, len(keys))
	for _, k := range keys {
		if rec := pr.running[k]; rec != nil {
			since := rec.Since
			out = append(out, beacon.PeerRecovery{Service: k.service, Host: k.host, Since: &since,
				BoundSeconds: rec.BoundSeconds, Held: rec.HeldRequests, Recovery: mustJSON(*rec)})
			continue
		}
		m := pr.memo[k]
		m.reported = true
		since := m.rec.Since
		out = append(out, beacon.PeerRecovery{Service: k.service, Host: k.host, Since: &since,
			WaitedSeconds: m.rec.WaitedSeconds, BoundSeconds: m.bound, Held: m.held,
			Recovery: mustJSON(m.rec), RecordingRefusal: m.recording})
	}
	return out
}

func (pr *Peer) catalog(ctx context.Context, p *beacon.Pass) *catalog.Catalog {
	if pr.LoadCatalog != nil {
		c, err := pr.LoadCatalog(ctx)
		if err == nil {
			return c
		}
		p.Refuse("catalog_unreadable", store.CatalogKey, "read the site catalog for peer recovery: %v", err)
	}
	return catalog.OrShipped(pr.Catalog)
}

// judge decides one standing: not_recovered with its reason,
// already_recovered, a retained recording refusal, or a new attempt.
func (pr *Peer) judge(ctx context.Context, p *beacon.Pass, cat *catalog.Catalog, s *standing, b *beacon.PeerRecovery, now time.Time) {
	doc := p.Document
	target, _ := doc.Target(s.key.host)
	var svc *registry.Service
	if target != nil {
		svc, _ = target.Service(s.key.service)
	}
	var prod *catalog.Product
	var ok bool
	if svc != nil {
		prod, ok = Product(cat, svc)
	} else {
		prod, ok = cat.Lookup(s.key.service)
	}
	switch {
	case !ok:
		b.NotRecovered = fmt.Sprintf("the catalog has no service %q", s.key.service)
		return
	case prod.Answering == nil:
		b.NotRecovered = fmt.Sprintf("the catalog declares no answering question for %s", prod.Name)
		return
	case svc == nil:
		b.NotRecovered = fmt.Sprintf("the registry declares no unit for %s on %s", s.key.service, s.key.host)
		return
	}
	decl := prod.Answering
	scope := svc.EffectiveScope()

	pr.mu.Lock()
	if run := pr.running[s.key]; run != nil {
		// an attempt is under way off the pass: say so, start nothing
		pr.mu.Unlock()
		b.Recovery = mustJSON(*run)
		return
	}
	memo := pr.memo[s.key]
	if memo != nil && !memo.reported {
		// the attempt ended since the last pass: this pass carries it
		memo.reported = true
		pr.mu.Unlock()
		b.Recovery, b.RecordingRefusal = mustJSON(memo.rec), memo.recording
		return
	}
	pr.mu.Unlock()
	if memo != nil && memo.oldest == s.ident && memo.recording != nil && proves(&memo.rec, svc.Unit, scope, decl) {
		// the attempt ran but could not be recorded: keep saying so for
		// the same oldest request instead of restarting again
		b.Recovery, b.RecordingRefusal = mustJSON(memo.rec), memo.recording
		return
	}
	var rows []register.Recovery
	if pr.Register != nil {
		var err error
		if rows, err = pr.Register.Read(); err != nil {
			b.NotRecovered = fmt.Sprintf("the register cannot be read: %v", err)
			return
		}
	}
	for i := len(rows) - 1; i >= 0; i-- {
		r := &rows[i]
		if r.Service != s.key.service || r.Host != s.key.host || r.ObservedBy != p.Host {
			continue
		}
		if r.Since.Equal(s.oldest.AcceptedAt) && proves(r, svc.Unit, scope, decl) {
			b.AlreadyRecovered, b.Recovery = true, mustJSON(*r)
			return
		}
		break // the newest attempt on this service decides
	}

	rec := register.Recovery{
		Kind: register.Kind, State: register.Running, When: now,
		Service: s.key.service, Host: s.key.host, Unit: svc.Unit, Scope: scope,
		Question:    register.Question{Method: decl.Method, Path: decl.Path, Body: decl.Body, Endpoint: s.oldest.Endpoint, Repair: nonNil(decl.Repair)},
		Declaration: cloneAnswering(decl),
		Since:       s.oldest.AcceptedAt, WaitedSeconds: now.Sub(s.oldest.AcceptedAt).Seconds(),
		BoundSeconds: b.BoundSeconds, HeldRequests: s.held,
		Alerts: []register.AlertOutcome{}, ObservedBy: p.Host,
	}
	plan := Plan{
		Host: s.key.host, Service: s.key.service, Unit: svc.Unit, Scope: scope,
		Steps: rec.Question.Repair, Inputs: StepInputs(doc.ServiceResolver.RefreshSeconds),
	}
	pr.mu.Lock()
	if len(pr.running) >= pr.concurrency() {
		n := len(pr.running)
		pr.mu.Unlock()
		b.NotRecovered = fmt.Sprintf("%d peer recoveries already run on this host, its cap; this one is considered again next pass", n)
		return
	}
	if pr.running == nil {
		pr.running = map[standingKey]*register.Recovery{}
	}
	if pr.base == nil {
		pr.base, pr.cancel = context.WithCancel(context.WithoutCancel(ctx))
	}
	started := rec
	pr.running[s.key] = &started
	base := pr.base
	pr.wg.Add(1)
	pr.mu.Unlock()
	b.Recovery = mustJSON(started)
	alerts := slices.Clone(target.Alerts)
	go func() {
		defer pr.wg.Done()
		pr.attempt(base, pr.reach(*target, cat), s, rec, plan, alerts, b.BoundSeconds)
	}()
}

// attempt runs one recovery off the pass: the steps and the restart on the
// serving host, the alerts, the register append; then it leaves the
// outcome for the next pass.
func (pr *Peer) attempt(ctx context.Context, on Reach, s *standing, rec register.Recovery, plan Plan, alerts []registry.AlertChannel, bound float64) {
	out := on.Recover(ctx, plan)
	rec.State = register.Attempted
	rec.Steps, rec.Restart, rec.Complete = out.Steps, &out.Restart, out.Complete
	var recording *beacon.FileRefusal
	rec, recording = alertAndRecord(ctx, pr.Alerter, alert.Elsewhere, alerts, pr.Register, rec, pr.logger().With("service", rec.Service, "host", rec.Host))
	pr.mu.Lock()
	if pr.memo == nil {
		pr.memo = map[standingKey]*peerMemo{}
	}
	pr.memo[s.key] = &peerMemo{oldest: s.ident, rec: rec, recording: recording, bound: bound, held: s.held}
	delete(pr.running, s.key)
	pr.mu.Unlock()
}

// reach is the serving host t as repair acts on it.
func (pr *Peer) reach(t registry.Target, cat *catalog.Catalog) Reach {
	r := Reach{Name: t.Name, Catalog: cat, Now: pr.Now}
	if t.OS == registry.OSDarwin {
		r.LaunchdDomain = t.LaunchdDomain
	}
	if pr.Connect != nil {
		r.Host = pr.Connect(t)
	}
	if r.Host == nil {
		r.Unreachable = refusal.New(refusal.NoManager, "no host channel to reach %s", t.Name)
	}
	return r
}

// proves reports whether rec is a complete attempt for unit under the
// current declaration: the same unit, an answering snapshot asking the
// same question with the same repair steps, every declared step applied
// in order and the restart done. A row without a snapshot proves nothing.
func proves(rec *register.Recovery, unit, scope string, decl *catalog.Answering) bool {
	if rec.Unit != unit || (rec.Scope != "" && rec.Scope != scope) || rec.Declaration == nil {
		return false
	}
	if !rec.Declaration.SameQuestion(decl) || !rec.Declaration.SameRepair(decl) {
		return false
	}
	if !rec.Complete || rec.Restart == nil || !rec.Restart.OK || len(rec.Steps) != len(decl.Repair) {
		return false
	}
	for i, st := range rec.Steps {
		if !st.OK || st.Step != decl.Repair[i] {
			return false
		}
	}
	return true
}

func cloneAnswering(a *catalog.Answering) *catalog.Answering {
	c := *a
	c.Body = slices.Clone(a.Body)
	c.Repair = nonNil(a.Repair)
	return &c
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return slices.Clone(s)
}
