package repair

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wisent/stado/alert"
	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/register"
	"github.com/wisent/stado/registry"
)

// detailMax bounds the response detail kept for an unsuccessful answer.
const detailMax = 2048

// Answerer is the beacon contributor that asks every declared service of
// this host its answering question, reads the answers a pass later, and
// recovers a service whose question stands. Contribute never waits on a
// service: questions and recoveries run in goroutines of their own and are
// read by the next pass. It is safe for concurrent use; Close ends it.
type Answerer struct {
	// Catalog holds the products and repair steps; nil means
	// catalog.Shipped(). Swap it between passes with SetCatalog.
	Catalog *catalog.Catalog
	// Host is this machine's end of the channel (a *local.Host): it runs
	// the repair steps and the restart. Nil refuses both.
	Host channel.Host
	// Register receives each finished attempt; nil means none is kept
	// (reported as a recording refusal).
	Register *register.File
	// Alerter delivers alerts; nil means the zero alert.Alerter.
	Alerter *alert.Alerter
	// Client sends the questions; nil means a client without keep-alive
	// and without any timeout (a question ends when it is forgotten).
	Client *http.Client
	// Now is the clock; nil means time.Now.
	Now    func() time.Time
	Logger *slog.Logger
	// Incomplete alerts this host's incomplete declarations on every pass
	// the answerer contributes to; nil means one with the answerer's
	// Alerter and clock and the default reminder interval.
	Incomplete *IncompleteAlerts

	once    sync.Once
	mu      sync.Mutex
	states  map[string]*serviceState
	ctx     context.Context
	cancel  context.CancelFunc
	running sync.WaitGroup
}

// serviceState is what the answerer keeps about one service's question.
type serviceState struct {
	id     questionID
	probe  *probe           // the question in flight, nil when none
	last   *beacon.Finished // the newest finished question
	ep     episode
	active *register.Recovery // the attempt running now, nil when none
}

// questionID is everything whose change retires a question.
type questionID struct {
	unit, endpoint, method, path, body string
}

// episode is one continuous failed-answering episode.
type episode struct {
	// last is the episode's latest attempt, nil before the first.
	last *register.Recovery
	// attempted is set when an attempt completed (steps and restart ended
	// well): a later standing reading does not restart again.
	attempted bool
	// repair is the step list the attempt ran.
	repair []string
	// recording names a failed register append of this episode.
	recording *beacon.FileRefusal
}

// probe is one question in flight.
type probe struct {
	since  time.Time
	cancel context.CancelFunc
	done   chan struct{}
	result beacon.Finished // written before done is closed
}

func (a *Answerer) init() {
	a.once.Do(func() {
		a.states = map[string]*serviceState{}
		a.ctx, a.cancel = context.WithCancel(context.Background())
		if a.Incomplete == nil {
			a.Incomplete = &IncompleteAlerts{Alerter: a.Alerter, Now: a.Now}
		}
	})
}

func (a *Answerer) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func (a *Answerer) logger() *slog.Logger {
	if a.Logger != nil {
		return a.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func (a *Answerer) client() *http.Client {
	if a.Client != nil {
		return a.Client
	}
	return defaultProbeClient
}

var defaultProbeClient = &http.Client{
	Transport: &http.Transport{
		DisableKeepAlives: true,
		Proxy:             nil,
		DialContext:       (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext,
	},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// Close forgets every question and waits for running recoveries to end.
func (a *Answerer) Close() {
	a.init()
	a.cancel()
	a.mu.Lock()
	for name, st := range a.states {
		st.forget()
		delete(a.states, name)
	}
	a.mu.Unlock()
	a.running.Wait()
	a.Incomplete.Idle()
}

// Idle waits until no recovery and no alert runs (tests and shutdown use
// it).
func (a *Answerer) Idle() {
	a.running.Wait()
	if a.Incomplete != nil {
		a.Incomplete.Idle()
	}
}

func (st *serviceState) forget() {
	if st.probe != nil {
		st.probe.cancel()
		st.probe = nil
	}
}

// Contribute implements beacon.Contributor: one reading per declared
// service of this host whose product declares an answering question, and
// the alerts of its incomplete declarations (IncompleteAlerts).
func (a *Answerer) Contribute(ctx context.Context, p *beacon.Pass) {
	a.init()
	a.Incomplete.Contribute(a.ctx, p)
	cat := catalog.OrShipped(a.Catalog)
	now := a.now().UTC()
	seen := map[string]bool{}
	a.mu.Lock()
	defer a.mu.Unlock()
	if p.Target != nil && p.Document != nil {
		for i := range p.Target.Services {
			svc := &p.Target.Services[i]
			seen[svc.Name] = true
			block := a.read(p, cat, svc, now)
			if block == nil {
				continue
			}
			// without a unit report (the units could not be observed this
			// pass) the block has nowhere to go; the state is kept
			if rep := p.Unit(svc.Name); rep != nil {
				rep.Answering = block
			}
		}
	}
	for name, st := range a.states {
		if !seen[name] {
			st.forget()
			delete(a.states, name)
		}
	}
}

// Product returns the catalog product a declaration is an instance of: by
// its product field, else its name, else its unit.
func Product(cat *catalog.Catalog, svc *registry.Service) (*catalog.Product, bool) {
	for _, key := range []string{svc.Product, svc.Name, svc.Unit} {
		if key == "" {
			continue
		}
		if p, ok := cat.Lookup(key); ok {
			return p, true
		}
	}
	return nil, false
}

// Endpoint returns where svc's question goes from this host, or why it
// cannot be read: the directory must have an entry for svc on this host
// with a port. The address is the entry's own (loopback included), else the
// target's SSH address, else the target name.
func Endpoint(doc *registry.Document, t *registry.Target, svc string) (string, string) {
	e, ok := doc.DirectoryEntryOn(svc, t.Name)
	switch {
	case !ok && len(doc.DirectoryEntries(svc)) == 0:
		return "", fmt.Sprintf("the directory has no entry for %s, so no port to ask", svc)
	case !ok:
		var hosts []string
		for _, o := range doc.DirectoryEntries(svc) {
			hosts = append(hosts, o.Host)
		}
		return "", fmt.Sprintf("the directory places %s on %s, not on this host (%s)", svc, strings.Join(hosts, ", "), t.Name)
	case e.Port <= 0:
		return "", fmt.Sprintf("the directory records no port for %s on %s", svc, t.Name)
	}
	return net.JoinHostPort(doc.ListenAddress(e), strconv.Itoa(e.Port)), ""
}

// read advances one service's state and returns its block (nil when the
// product declares no question). a.mu is held.
func (a *Answerer) read(p *beacon.Pass, cat *catalog.Catalog, svc *registry.Service, now time.Time) *beacon.Answering {
	prod, ok := Product(cat, svc)
	if !ok || prod.Answering == nil {
		a.retire(svc.Name)
		return nil
	}
	decl := prod.Answering
	q := &beacon.Question{Method: decl.Method, Path: decl.Path, Body: decl.Body, Repair: slices.Clone(decl.Repair)}
	if q.Repair == nil {
		q.Repair = []string{}
	}
	refresh := p.Document.ServiceResolver.RefreshSeconds
	if refresh <= 0 {
		a.retire(svc.Name)
		return &beacon.Answering{State: beacon.AnswerUnreadable, Question: q,
			Unreadable: "the registry declares no service_resolver.refresh_seconds, so no bound for an answer can be read"}
	}
	endpoint, why := Endpoint(p.Document, p.Target, svc.Name)
	if why != "" {
		a.retire(svc.Name)
		return &beacon.Answering{State: beacon.AnswerUnreadable, Question: q, Unreadable: why}
	}
	q.Endpoint = endpoint
	bound := time.Duration(refresh) * time.Second
	id := questionID{unit: svc.Unit, endpoint: endpoint, method: decl.Method, path: decl.Path, body: string(decl.Body)}
	st := a.states[svc.Name]
	if st != nil && st.id != id && st.active == nil {
		// a changed unit, port, method, path or body: the old question and
		// its answer say nothing about the new one
		a.retire(svc.Name)
		st = nil
	}
	if st == nil {
		st = &serviceState{id: id}
		a.states[svc.Name] = st
	}
	block := &beacon.Answering{Question: q, BoundSeconds: bound.Seconds()}
	defer func() { st.attach(block) }()

	if st.active != nil {
		// a recovery is running; it forgets the question when its restart
		// ends well
		block.State = beacon.AnswerStood
		if st.probe != nil {
			since := st.probe.since
			block.Since, block.WaitedSeconds = &since, now.Sub(since).Seconds()
		}
		return block
	}
	if st.probe == nil {
		st.probe = a.ask(endpoint, decl, now)
		since := st.probe.since
		block.State, block.Since = beacon.AnswerAsked, &since
		return block
	}
	pr := st.probe
	select {
	case <-pr.done:
		res := pr.result
		st.last, st.probe = &res, nil
		block.State, block.Finished = beacon.AnswerFinished, &res
		if res.Answered != nil && res.Answered.Successful {
			// a successful answer ends the episode; this block still shows
			// the episode's attempt, the next one does not
			ended := st.ep
			st.ep = episode{}
			st.probe = a.ask(endpoint, decl, now)
			ended.attach(block)
			return block
		}
		st.probe = a.ask(endpoint, decl, now)
		return block
	default:
	}
	since := pr.since
	waited := now.Sub(since)
	block.Since, block.WaitedSeconds = &since, waited.Seconds()
	if waited <= bound {
		block.State, block.Finished = beacon.AnswerWaiting, st.last
		return block
	}
	block.State = beacon.AnswerStood
	if st.ep.last != nil && !slices.Equal(st.ep.repair, q.Repair) {
		// other repair steps are declared now: a new episode
		st.ep = episode{}
	}
	if st.ep.attempted {
		block.AlreadyAttempted = true
		st.forget() // ask the restarted process afresh next pass
		return block
	}
	rec := &register.Recovery{
		Kind: register.Kind, State: register.Running, When: now,
		Service: svc.Name, Host: p.Target.Name, Unit: svc.Unit, Scope: svc.EffectiveScope(),
		Question: register.Question(*q), Declaration: decl,
		Since: since, WaitedSeconds: waited.Seconds(), BoundSeconds: bound.Seconds(),
		Steps: []register.StepResult{}, Alerts: []register.AlertOutcome{},
	}
	st.active = rec
	a.running.Add(1)
	go a.recover(st, pr, cat, *rec, slices.Clone(p.Target.Alerts), refresh)
	return block
}

// attach puts the episode's evidence on a block.
func (st *serviceState) attach(b *beacon.Answering) {
	if st.active != nil {
		b.Recovery = mustJSON(st.active)
		b.RecordingRefusal = st.ep.recording
		return
	}
	st.ep.attach(b)
}

func (ep *episode) attach(b *beacon.Answering) {
	if ep.last != nil && b.Recovery == nil {
		b.Recovery = mustJSON(ep.last)
	}
	if ep.recording != nil {
		b.RecordingRefusal = ep.recording
	}
}

func mustJSON(v any) json.RawMessage {
	data, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(fmt.Sprintf(`{"encode_error":%q}`, err.Error()))
	}
	return data
}

// retire drops a service's question, answer and episode. a.mu is held. A
// running recovery finishes on its own and then finds its state gone.
func (a *Answerer) retire(name string) {
	if st := a.states[name]; st != nil {
		st.forget()
		delete(a.states, name)
	}
}

// ask sends the question in a goroutine of its own. Its context ends only
// when the question is forgotten: no timeout, no retry.
func (a *Answerer) ask(endpoint string, decl *catalog.Answering, now time.Time) *probe {
	ctx, cancel := context.WithCancel(a.ctx)
	pr := &probe{since: now, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(pr.done)
		pr.result = a.send(ctx, endpoint, decl)
	}()
	return pr
}

func (a *Answerer) send(ctx context.Context, endpoint string, decl *catalog.Answering) beacon.Finished {
	start := time.Now()
	var body io.Reader
	if len(decl.Body) > 0 {
		body = bytes.NewReader(decl.Body)
	}
	req, err := http.NewRequestWithContext(ctx, decl.Method, "http://"+endpoint+decl.Path, body)
	if err != nil {
		return beacon.Finished{Refused: &beacon.Refused{Cause: "build request: " + err.Error(), At: a.now().UTC()}}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("User-Agent", "stado-answering")
	resp, err := a.client().Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return beacon.Finished{Refused: &beacon.Refused{Cause: err.Error(), At: a.now().UTC()}}
	}
	defer resp.Body.Close()
	ans := &beacon.Answered{Status: resp.StatusCode, Successful: resp.StatusCode >= 200 && resp.StatusCode < 300}
	if !ans.Successful {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, detailMax))
		ans.Detail = strings.ToValidUTF8(strings.TrimSpace(string(data)), "?")
	}
	ans.ElapsedMS = time.Since(start).Milliseconds()
	ans.At = a.now().UTC()
	return beacon.Finished{Answered: ans}
}

// reach is this machine (named host) as repair acts on it, with the
// catalog of the pass that found the question standing.
func (a *Answerer) reach(host string, cat *catalog.Catalog) Reach {
	r := Reach{Name: host, Host: a.Host, Catalog: cat, Now: a.Now}
	if a.Host == nil {
		r.Unreachable = refusal.New(refusal.NoManager, "this host process has no host end to run repair steps and restarts on")
	}
	return r
}

// recover runs the attempt: steps and restart (Recover), forget the question
// when the restart ended well, alerts, then the register append.
func (a *Answerer) recover(st *serviceState, pr *probe, cat *catalog.Catalog, rec register.Recovery, channels []registry.AlertChannel, refresh int) {
	defer a.running.Done()
	ctx := a.ctx
	out := a.reach(rec.Host, cat).Recover(ctx, Plan{
		Host: rec.Host, Service: rec.Service, Unit: rec.Unit, Scope: rec.Scope,
		Steps: rec.Question.Repair, Inputs: StepInputs(refresh),
	})
	rec.Steps, rec.Restart, rec.Complete = out.Steps, &out.Restart, out.Complete
	rec.State = register.Attempted
	if out.Restart.OK {
		// the next pass asks the new process afresh
		pr.cancel()
	}
	var recording *beacon.FileRefusal
	rec, recording = alertAndRecord(ctx, a.Alerter, alert.OnOwningHost, channels, a.Register, rec, a.logger().With("service", rec.Service))
	a.mu.Lock()
	defer a.mu.Unlock()
	st.active = nil
	st.ep.last = &rec
	st.ep.attempted = rec.Complete
	st.ep.repair = rec.Question.Repair
	st.ep.recording = recording
	if out.Restart.OK && st.probe == pr {
		st.probe = nil
	}
}

// alertAndRecord ends an attempt the same way for a host's own service and a
// peer's: the alert on every channel (its outcomes kept in rec), then the
// append to the register. where is alert.OnOwningHost for this host's own
// service and alert.Elsewhere for a peer's: the serving host's command
// channels belong on the serving host and never run here. A register that is missing or refuses the append
// is the recording refusal the beacon carries; the attempt stands either way.
func alertAndRecord(ctx context.Context, al *alert.Alerter, where alert.Where, channels []registry.AlertChannel, reg *register.File, rec register.Recovery, log *slog.Logger) (register.Recovery, *beacon.FileRefusal) {
	if al == nil {
		al = &alert.Alerter{}
	}
	rec.Alerts = al.Deliver(ctx, where, channels, alert.New(rec))
	if reg == nil {
		return rec, &beacon.FileRefusal{Op: "append", File: register.HomeFile, Cause: "no register configured on this host"}
	}
	err := reg.Append(rec)
	if err == nil {
		return rec, nil
	}
	log.Warn("recovery register", "err", err)
	var fe *register.FileError
	if errors.As(err, &fe) {
		return rec, &beacon.FileRefusal{Op: fe.Op, File: fe.File, Cause: fe.Cause()}
	}
	return rec, &beacon.FileRefusal{Op: "append", File: reg.Path, Cause: err.Error()}
}
