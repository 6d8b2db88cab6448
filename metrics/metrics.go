package metrics

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/register"
	"github.com/wisent/stado/release"
)

// Label values. Every label of every family takes its values from one of
// these closed sets (docs/metrics.md lists them); a value outside the set
// is counted under "other", so no input can grow a family's series.
var (
	passOutcomes    = []string{"published", "publish_failed"}
	publishCauses   = []string{"store_unwritable", beacon.CodeBeaconTooLarge}
	scopes          = [...]string{"system", "user"}
	unitStates      = [...]string{beacon.StateActive, beacon.StateInactive, beacon.StateFailed, beacon.StateFailing, beacon.StateMissing, beacon.StateMasked, other}
	answerStates    = [...]string{beacon.AnswerAsked, beacon.AnswerWaiting, beacon.AnswerStood, beacon.AnswerFinished, beacon.AnswerUnreadable, other}
	verdicts        = []string{"answered", "unsuccessful", "refused", "stood"}
	attemptOutcomes = []string{"complete", "step_failed", "restart_failed"}
	activations     = []string{release.OutcomeActivated, release.OutcomeUnchanged, release.OutcomeInstalled, release.OutcomeRestored, release.OutcomeFailed, other}
	storeOps        = []string{"get", "put", "cas", "list", "visit", "delete"}
)

// other stands for a value outside a label's closed set.
const other = "other"

// Host is the metrics of one host process. Its methods are safe for
// concurrent use: the pass loop reports passes while the host API
// serves scrapes and every goroutine of the process uses the store.
type Host struct {
	// own is every stado_ family, for the scrape
	own []exposed

	passDuration    *histFamily
	passes          *family
	publishFailures *family
	lastPublished   *family
	units           *family
	undeclared      *family
	refusals        *family
	questions       *family
	verdicts        *family
	recoveries      *family
	peerRecoveries  *family
	activations     *family
	activeRelease   *family
	storeDuration   *histFamily
	storeFailures   *family

	// now times store operations; nil means time.Now (tests set it)
	now func() time.Time
	// since is when the process started: a recovery or an activation that
	// began earlier was counted (or missed) by an earlier process.
	since time.Time

	mu sync.Mutex
	// what was counted already, so a record a beacon carries pass after
	// pass counts once: one entry per declared service, peer standing or
	// product, bounded by the registry and the release state
	stood       map[string]time.Time
	attempts    map[string]time.Time
	peers       map[[2]string]time.Time
	activatedAt map[string]time.Time
}

// New returns the metrics of a host process started at since: its own
// families, every series of a closed label set at zero; a scrape adds the
// Go runtime's and the process's.
func New(since time.Time) *Host {
	m := &Host{
		since: since,
		passDuration: newHistogram("stado_pass_duration_seconds",
			"How long a beacon pass took, from its start to the end of its publication.",
			exponential(0.01, 2, 12), ""),
		passes: newFamily("stado_passes_total",
			"Beacon passes ended, by whether the store took the beacon (published) or refused it (publish_failed).",
			"counter", "outcome").over(passOutcomes),
		publishFailures: newFamily("stado_beacon_publish_failures_total",
			"Passes whose beacon did not reach the store whole: store_unwritable (the store refused it) or beacon_too_large (published without its reports).",
			"counter", "cause").over(publishCauses),
		lastPublished: newFamily("stado_beacon_last_published_timestamp_seconds",
			"Unix time of the pass whose beacon the store last took.", "gauge"),
		units: newFamily("stado_units",
			"Declared units of this host by scope and by the state the last pass observed.",
			"gauge", "scope", "state").over(scopes[:], unitStates[:]),
		undeclared: newFamily("stado_undeclared_units",
			"Loaded service units no declaration covers, by the state the last pass observed.",
			"gauge", "state").over(unitStates[:]),
		refusals: newFamily("stado_beacon_refusals",
			"Refusals the last pass's beacon carried, by refusal code.",
			"gauge", "code"),
		questions: newFamily("stado_answering_questions",
			"Answering questions of this host's services by the state the last pass read.",
			"gauge", "state").over(answerStates[:]),
		verdicts: newFamily("stado_answering_verdicts_total",
			"Answering questions ended: answered (2xx), unsuccessful (another status), refused (no answer from the transport), or stood (unanswered past the bound; counted once per question).",
			"counter", "verdict").over(verdicts),
		recoveries: newFamily("stado_recoveries_total",
			"Recovery attempts of this host's standing services that ended, by outcome.",
			"counter", "outcome").over(attemptOutcomes),
		peerRecoveries: newFamily("stado_peer_recoveries_total",
			"Recovery attempts this host ran on other hosts' standing services that ended, by outcome.",
			"counter", "outcome").over(attemptOutcomes),
		activations: newFamily("stado_release_activations_total",
			"Release activations on this host seen in its release state since the process started, by outcome.",
			"counter", "outcome").over(activations),
		activeRelease: newFamily("stado_release_active_info",
			"The active release version of each product installed on this host (always 1).",
			"gauge", "product", "version"),
		storeDuration: newHistogram("stado_store_operation_duration_seconds",
			"How long a store operation of the host process took, by operation; visit includes the caller's work on each object.",
			exponential(0.0005, 2, 14), "operation", storeOps...),
		storeFailures: newFamily("stado_store_operation_failures_total",
			"Store operations of the host process that failed, by operation (an absent key and a lost compare-and-swap are answers, not failures).",
			"counter", "operation").over(storeOps),
		stood:       map[string]time.Time{},
		attempts:    map[string]time.Time{},
		peers:       map[[2]string]time.Time{},
		activatedAt: map[string]time.Time{},
	}
	m.own = []exposed{
		m.passDuration, m.passes, m.publishFailures, m.lastPublished,
		m.units, m.undeclared, m.refusals, m.questions, m.verdicts,
		m.recoveries, m.peerRecoveries, m.activations, m.activeRelease,
		m.storeDuration, m.storeFailures,
	}
	return m
}

func (m *Host) clock() time.Time {
	if m.now != nil {
		return m.now()
	}
	return time.Now()
}

// Handler serves the metrics in Prometheus's text exposition format,
// version 0.0.4: every family, sorted by name, each series sorted by its
// label values. A scrape is written whole before it is sent, so a slow
// reader holds no lock.
func (m *Host) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		b := m.exposition()
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		_, _ = w.Write(b)
	})
}

// exposition writes one scrape. Its work is bounded: a fixed set of
// families whose series the closed label sets and the beacon's own
// bounds limit, and a fixed set of runtime and process readings.
func (m *Host) exposition() []byte {
	fams := make([]exposed, 0, len(m.own)+len(runtimeFamilies)+8)
	fams = append(fams, m.own...)
	fams = appendRuntime(fams)
	fams = appendProcess(fams)
	slices.SortFunc(fams, func(a, b exposed) int { return strings.Compare(a.familyName(), b.familyName()) })
	b := make([]byte, 0, 32<<10)
	for _, f := range fams {
		b = f.appendTo(b)
	}
	return b
}

// in returns v when it is one of set, else other.
func in(set []string, v string) string {
	if slices.Contains(set, v) {
		return v
	}
	return other
}

// at returns v's position in set; a value outside the set takes other's
// position, or -1 when the set has no other.
func at(set []string, v string) int {
	if i := slices.Index(set, v); i >= 0 {
		return i
	}
	return slices.Index(set, other)
}

// PassEnded implements beacon.PassObserver: it reads one ended pass into
// the families.
func (m *Host) PassEnded(r beacon.PassReport) {
	m.passDuration.observe(r.Took.Seconds(), "")
	b := r.Pass.Beacon
	switch {
	case r.PublishErr != nil:
		m.passes.add(1, "publish_failed")
		m.publishFailures.add(1, "store_unwritable")
	default:
		m.passes.add(1, "published")
		m.lastPublished.set(float64(b.At.UnixNano()) / 1e9)
		if r.Slimmed {
			m.publishFailures.add(1, beacon.CodeBeaconTooLarge)
		}
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	scopeOf := map[string]string{}
	if t := r.Pass.Target; t != nil {
		for _, s := range t.Services {
			scopeOf[s.Name] = s.EffectiveScope()
		}
	}
	// this pass's counts, by position in the closed sets (as the families
	// hold them: scope by state); a scope outside its set in odd
	var (
		units      [len(scopes) * len(unitStates)]float64
		undeclared [len(unitStates)]float64
		questions  [len(answerStates)]float64
		odd        map[key]float64
	)
	for _, u := range b.Units {
		scope, ok := scopeOf[u.Service]
		if !ok {
			scope = "system" // a declaration's default
		}
		state := at(unitStates[:], u.State)
		if sc := at(scopes[:], scope); sc >= 0 {
			units[sc*len(unitStates)+state]++
		} else {
			if odd == nil {
				odd = map[key]float64{}
			}
			odd[key{other, unitStates[state]}]++
		}
		if u.Answering != nil {
			questions[at(answerStates[:], u.Answering.State)]++
			m.answering(u.Service, u.Answering)
		}
	}
	for _, u := range b.Undeclared {
		undeclared[at(unitStates[:], u.State)]++
	}
	var refusals map[key]float64
	if len(b.Refusals) > 0 {
		refusals = map[key]float64{}
		for _, ref := range b.Refusals {
			refusals[key{ref.Code}]++
		}
	}
	// each family at once: a scrape never sees half a pass in one
	m.units.replace(units[:], odd)
	m.undeclared.replace(undeclared[:], nil)
	m.questions.replace(questions[:], nil)
	m.refusals.replace(nil, refusals)
	for _, p := range b.PeerRecoveries {
		m.peer(p)
	}
	m.releases(b.Releases)
}

// answering reads one service's block: its verdict
// when it ended this pass, and the episode's attempt once it has ended.
func (m *Host) answering(service string, a *beacon.Answering) {
	switch {
	case a.State == beacon.AnswerFinished && a.Finished != nil:
		// a finished question is carried as finished by one pass only
		switch f := a.Finished; {
		case f.Answered != nil && f.Answered.Successful:
			m.verdicts.add(1, "answered")
		case f.Answered != nil:
			m.verdicts.add(1, "unsuccessful")
		case f.Refused != nil:
			m.verdicts.add(1, "refused")
		}
	case a.State == beacon.AnswerStood && a.Since != nil:
		// a question stands pass after pass; it is one question by when it
		// was sent
		if !m.stood[service].Equal(*a.Since) {
			m.stood[service] = *a.Since
			m.verdicts.add(1, "stood")
		}
	}
	if rec, ok := m.ended(a.Recovery); ok && !m.attempts[service].Equal(rec.When) {
		m.attempts[service] = rec.When
		m.recoveries.add(1, outcome(rec))
	}
}

// peer reads one peer block: an attempt this process ran, once it ended.
// A register row that proves an earlier recovery (already_recovered) is
// not an attempt of this pass.
func (m *Host) peer(p beacon.PeerRecovery) {
	if p.AlreadyRecovered {
		return
	}
	rec, ok := m.ended(p.Recovery)
	if !ok {
		return
	}
	key := [2]string{p.Service, p.Host}
	if !m.peers[key].Equal(rec.When) {
		m.peers[key] = rec.When
		m.peerRecoveries.add(1, outcome(rec))
	}
}

// ended decodes a block's recovery record when it is an attempt that has
// ended and began in this process's life.
func (m *Host) ended(raw json.RawMessage) (register.Recovery, bool) {
	if len(raw) == 0 {
		return register.Recovery{}, false
	}
	var rec register.Recovery
	if json.Unmarshal(raw, &rec) != nil {
		return rec, false
	}
	return rec, rec.State == register.Attempted && !rec.When.Before(m.since)
}

// outcome names an ended attempt: complete, restart_failed (the restart
// did not end well, whatever the steps did) or step_failed.
func outcome(rec register.Recovery) string {
	switch {
	case rec.Complete:
		return "complete"
	case rec.Restart == nil || !rec.Restart.OK:
		return "restart_failed"
	default:
		return "step_failed"
	}
}

// releases reads the release block: the active version of each product,
// and each product's last activation once, when it happened in this
// process's life.
func (m *Host) releases(r *beacon.Releases) {
	if r == nil {
		m.activeRelease.reset()
		return
	}
	var active map[key]float64
	for _, p := range r.Products {
		if p.Active != nil {
			if active == nil {
				active = map[key]float64{}
			}
			active[key{p.Product, p.Active.Version}] = 1
		}
		if l := p.Last; l != nil && !l.At.Before(m.since) && !m.activatedAt[p.Product].Equal(l.At) {
			m.activatedAt[p.Product] = l.At
			m.activations.add(1, in(activations, l.Outcome))
		}
	}
	m.activeRelease.replace(nil, active)
}
