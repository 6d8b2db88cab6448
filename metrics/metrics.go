package metrics

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

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
	scopes          = []string{"system", "user"}
	unitStates      = []string{beacon.StateActive, beacon.StateInactive, beacon.StateFailed, beacon.StateFailing, beacon.StateMissing, beacon.StateMasked, other}
	answerStates    = []string{beacon.AnswerAsked, beacon.AnswerWaiting, beacon.AnswerStood, beacon.AnswerFinished, beacon.AnswerUnreadable, other}
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
	reg *prometheus.Registry

	passDuration    prometheus.Histogram
	passes          *prometheus.CounterVec
	publishFailures *prometheus.CounterVec
	lastPublished   prometheus.Gauge
	units           *prometheus.GaugeVec
	undeclared      *prometheus.GaugeVec
	refusals        *prometheus.GaugeVec
	questions       *prometheus.GaugeVec
	verdicts        *prometheus.CounterVec
	recoveries      *prometheus.CounterVec
	peerRecoveries  *prometheus.CounterVec
	activations     *prometheus.CounterVec
	activeRelease   *prometheus.GaugeVec
	storeDuration   *prometheus.HistogramVec
	storeFailures   *prometheus.CounterVec

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

// New returns the metrics of a host process started at since, in a
// registry of their own with the Go runtime and process collectors.
func New(since time.Time) *Host {
	m := &Host{
		reg:   prometheus.NewRegistry(),
		since: since,
		passDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "stado_pass_duration_seconds",
			Help:    "How long a beacon pass took, from its start to the end of its publication.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 12),
		}),
		passes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stado_passes_total",
			Help: "Beacon passes ended, by whether the store took the beacon (published) or refused it (publish_failed).",
		}, []string{"outcome"}),
		publishFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stado_beacon_publish_failures_total",
			Help: "Passes whose beacon did not reach the store whole: store_unwritable (the store refused it) or beacon_too_large (published without its reports).",
		}, []string{"cause"}),
		lastPublished: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "stado_beacon_last_published_timestamp_seconds",
			Help: "Unix time of the pass whose beacon the store last took.",
		}),
		units: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "stado_units",
			Help: "Declared units of this host by scope and by the state the last pass observed.",
		}, []string{"scope", "state"}),
		undeclared: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "stado_undeclared_units",
			Help: "Loaded service units no declaration covers, by the state the last pass observed.",
		}, []string{"state"}),
		refusals: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "stado_beacon_refusals",
			Help: "Refusals the last pass's beacon carried, by refusal code.",
		}, []string{"code"}),
		questions: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "stado_answering_questions",
			Help: "Answering questions of this host's services by the state the last pass read.",
		}, []string{"state"}),
		verdicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stado_answering_verdicts_total",
			Help: "Answering questions ended: answered (2xx), unsuccessful (another status), refused (no answer from the transport), or stood (unanswered past the bound; counted once per question).",
		}, []string{"verdict"}),
		recoveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stado_recoveries_total",
			Help: "Recovery attempts of this host's standing services that ended, by outcome.",
		}, []string{"outcome"}),
		peerRecoveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stado_peer_recoveries_total",
			Help: "Recovery attempts this host ran on other hosts' standing services that ended, by outcome.",
		}, []string{"outcome"}),
		activations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stado_release_activations_total",
			Help: "Release activations on this host seen in its release state since the process started, by outcome.",
		}, []string{"outcome"}),
		activeRelease: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "stado_release_active_info",
			Help: "The active release version of each product installed on this host (always 1).",
		}, []string{"product", "version"}),
		storeDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "stado_store_operation_duration_seconds",
			Help:    "How long a store operation of the host process took, by operation; visit includes the caller's work on each object.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}, []string{"operation"}),
		storeFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stado_store_operation_failures_total",
			Help: "Store operations of the host process that failed, by operation (an absent key and a lost compare-and-swap are answers, not failures).",
		}, []string{"operation"}),
		stood:       map[string]time.Time{},
		attempts:    map[string]time.Time{},
		peers:       map[[2]string]time.Time{},
		activatedAt: map[string]time.Time{},
	}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.passDuration, m.passes, m.publishFailures, m.lastPublished,
		m.units, m.undeclared, m.refusals, m.questions, m.verdicts,
		m.recoveries, m.peerRecoveries, m.activations, m.activeRelease,
		m.storeDuration, m.storeFailures,
	)
	// every series of a closed label set exists from the start, at zero,
	// so a rate or an alert never waits for the first event
	for _, v := range passOutcomes {
		m.passes.WithLabelValues(v)
	}
	for _, v := range publishCauses {
		m.publishFailures.WithLabelValues(v)
	}
	for _, v := range verdicts {
		m.verdicts.WithLabelValues(v)
	}
	for _, v := range attemptOutcomes {
		m.recoveries.WithLabelValues(v)
		m.peerRecoveries.WithLabelValues(v)
	}
	for _, v := range activations {
		m.activations.WithLabelValues(v)
	}
	for _, v := range storeOps {
		m.storeDuration.WithLabelValues(v)
		m.storeFailures.WithLabelValues(v)
	}
	m.resetGauges()
	return m
}

func (m *Host) clock() time.Time {
	if m.now != nil {
		return m.now()
	}
	return time.Now()
}

// Handler serves the metrics in Prometheus's text exposition format.
func (m *Host) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Gatherer is the registry the metrics live in.
func (m *Host) Gatherer() prometheus.Gatherer { return m.reg }

// resetGauges sets every gauge of a closed label set to zero and drops
// the series of open ones (refusal codes, products).
func (m *Host) resetGauges() {
	m.setGauges(map[[2]string]float64{}, map[string]float64{}, map[string]float64{}, map[string]float64{})
	m.activeRelease.Reset()
}

// setGauges sets the per-pass gauges from this pass's counts: every series
// of a closed set (zero when not counted), and the refusal codes counted.
func (m *Host) setGauges(units map[[2]string]float64, undeclared, questions, refusals map[string]float64) {
	for _, st := range unitStates {
		for _, sc := range scopes {
			m.units.WithLabelValues(sc, st).Set(units[[2]string{sc, st}])
		}
		m.undeclared.WithLabelValues(st).Set(undeclared[st])
	}
	for _, st := range answerStates {
		m.questions.WithLabelValues(st).Set(questions[st])
	}
	m.refusals.Reset()
	for code, n := range refusals {
		m.refusals.WithLabelValues(code).Set(n)
	}
}

// in returns v when it is one of set, else other.
func in(set []string, v string) string {
	for _, s := range set {
		if s == v {
			return v
		}
	}
	return other
}

// PassEnded implements beacon.PassObserver: it reads one ended pass into
// the families.
func (m *Host) PassEnded(r beacon.PassReport) {
	m.passDuration.Observe(r.Took.Seconds())
	b := r.Pass.Beacon
	switch {
	case r.PublishErr != nil:
		m.passes.WithLabelValues("publish_failed").Inc()
		m.publishFailures.WithLabelValues("store_unwritable").Inc()
	default:
		m.passes.WithLabelValues("published").Inc()
		m.lastPublished.Set(float64(b.At.UnixNano()) / 1e9)
		if r.Slimmed {
			m.publishFailures.WithLabelValues(beacon.CodeBeaconTooLarge).Inc()
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
	units := map[[2]string]float64{}
	undeclared, questions, refusals := map[string]float64{}, map[string]float64{}, map[string]float64{}
	for _, u := range b.Units {
		scope, ok := scopeOf[u.Service]
		if !ok {
			scope = "system" // a declaration's default
		}
		units[[2]string{in(scopes, scope), in(unitStates, u.State)}]++
		if u.Answering != nil {
			questions[in(answerStates, u.Answering.State)]++
			m.answering(u.Service, u.Answering)
		}
	}
	for _, u := range b.Undeclared {
		undeclared[in(unitStates, u.State)]++
	}
	for _, ref := range b.Refusals {
		refusals[ref.Code]++
	}
	m.setGauges(units, undeclared, questions, refusals)
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
			m.verdicts.WithLabelValues("answered").Inc()
		case f.Answered != nil:
			m.verdicts.WithLabelValues("unsuccessful").Inc()
		case f.Refused != nil:
			m.verdicts.WithLabelValues("refused").Inc()
		}
	case a.State == beacon.AnswerStood && a.Since != nil:
		// a question stands pass after pass; it is one question by when it
		// was sent
		if !m.stood[service].Equal(*a.Since) {
			m.stood[service] = *a.Since
			m.verdicts.WithLabelValues("stood").Inc()
		}
	}
	if rec, ok := m.ended(a.Recovery); ok && !m.attempts[service].Equal(rec.When) {
		m.attempts[service] = rec.When
		m.recoveries.WithLabelValues(outcome(rec)).Inc()
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
		m.peerRecoveries.WithLabelValues(outcome(rec)).Inc()
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
	m.activeRelease.Reset()
	if r == nil {
		return
	}
	for _, p := range r.Products {
		if p.Active != nil {
			m.activeRelease.WithLabelValues(p.Product, p.Active.Version).Set(1)
		}
		if l := p.Last; l != nil && !l.At.Before(m.since) && !m.activatedAt[p.Product].Equal(l.At) {
			m.activatedAt[p.Product] = l.At
			m.activations.WithLabelValues(in(activations, l.Outcome)).Inc()
		}
	}
}
