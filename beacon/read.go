package beacon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/wisent/stado/spread"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

// View is the read half's picture of the fleet: the registry joined with
// the latest beacon of every host. It never opens a connection to a host.
type View struct {
	Document *registry.Document
	// Outline is set when Document was decoded as an outline
	// (Selection.Outline): the services of Document's targets are then nil
	// until Outline.Whole decodes them, and their outlines are in
	// Outline.Services.
	Outline *registry.Outline
	Meta    store.Meta
	// Beacons by host name; a host without one never published (or its
	// beacon expired).
	Beacons map[string]*Beacon
	// Unreadable beacons by host name, with the decode error.
	Unreadable map[string]string
	Now        time.Time
	// StaleAfter, when positive, overrides every beacon's own bound.
	StaleAfter time.Duration

	// declared is what the join reads of Document: every target's name
	// and its services' names, units, products and completeness. It is
	// built from Document on first use, or decoded alone (Selection.RowsOnly).
	declared []declaredTarget
	// targets indexes declared by name, built on first use, so that a
	// per-host question costs that host's rows, never a scan of every
	// target.
	targets map[string]int
	// joins counts the targets whose rows were joined with their beacon:
	// what the tests read to hold Doctor and Health linear in the fleet.
	joins int
}

// LoadView reads the registry and every beacon from st. A store without a
// registry is an error wrapping store.ErrNotFound: a failed or mistaken
// read never shows as a fleet with nothing declared. The stored document
// is validated as a push validates it, because the store can be changed
// behind stado's back: an invalid one is an error wrapping the
// *registry.ValidationError, and nothing of it is shown.
func LoadView(ctx context.Context, st store.Store, now time.Time, staleAfter time.Duration) (*View, error) {
	return LoadSelected(ctx, st, now, staleAfter, Selection{})
}

// Selection narrows what LoadSelected reads: a beacon of a host it leaves
// out is never decoded (and, where the store allows, never read). The zero
// Selection reads every beacon.
type Selection struct {
	// Host, when not empty, is the only host whose beacon is read.
	Host string
	// Targets, when not nil, is asked about each declared target once the
	// registry is read: only the beacons of the targets it accepts are
	// read, and no beacon of a host the registry does not declare.
	Targets func(t *registry.Target) bool
	// Cache, when not nil, remembers the validated registry between calls
	// (RegistryCache).
	Cache *RegistryCache
	// RowsOnly, with a Cache that holds the stored bytes' validation,
	// decodes of the registry only what the join reads (the targets'
	// names, their services' names, units, products and completeness):
	// the View then answers Rows, Undeclared, Health, Doctor and Declares
	// but its Document is nil. Without a cache hit the whole document is
	// decoded and validated, and Document is set.
	RowsOnly bool
	// Outline, with a Cache that holds the stored bytes' validation,
	// decodes the registry as a registry.Outline: the View's Outline holds
	// it and its Document is the outline's (each target's services left
	// out until Outline.Whole decodes them; the join reads their
	// outlines). A Targets func then sees no services. Without a cache hit
	// Outline is nil and the whole document is decoded and validated.
	Outline bool
}

// decoding is how much of the registry sel asks to decode.
func (s Selection) decoding() decoding {
	switch {
	case s.RowsOnly:
		return decodeRows
	case s.Outline:
		return decodeOutline
	}
	return decodeWhole
}

// all reports whether s reads every beacon.
func (s Selection) all() bool { return s.Host == "" && s.Targets == nil }

// selectedAtMost is how many hosts a selection may name before their
// beacons are read by one visit of the prefix rather than one Get each.
const selectedAtMost = 32

// LoadSelected is LoadView reading only the beacons sel selects. The View
// it returns knows nothing of the other hosts' beacons: ask it only about
// the hosts sel selected (Rows, Freshness, Undeclared of those), never for
// fleet-wide answers (Doctor, Health of every host). Its errors are
// LoadView's.
func LoadSelected(ctx context.Context, st store.Store, now time.Time, staleAfter time.Duration, sel Selection) (*View, error) {
	v := &View{Beacons: map[string]*Beacon{}, Unreadable: map[string]string{}, Now: now, StaleAfter: staleAfter}
	// The registry and the beacons are read and decoded side by side: at
	// fleet size each is a large part of the read. A selection by target
	// needs the registry first, to know whose beacons to read.
	reg := make(chan loadedRegistry, 1)
	go func() { reg <- loadRegistry(ctx, st, sel.Cache, sel.decoding()) }()
	var (
		r    loadedRegistry
		got  bool
		want func(host string) bool
	)
	hosts := []string{}
	switch {
	case sel.Targets != nil:
		r, got = <-reg, true
		if r.err != nil {
			return nil, r.err
		}
		if r.doc == nil {
			return nil, errors.New("a selection by target needs the whole registry: not with RowsOnly")
		}
		chosen := map[string]bool{}
		for i := range r.doc.Targets {
			t := &r.doc.Targets[i]
			if (sel.Host == "" || t.Name == sel.Host) && sel.Targets(t) {
				chosen[t.Name] = true
				hosts = append(hosts, t.Name)
			}
		}
		want = func(host string) bool { return chosen[host] }
	case sel.Host != "":
		hosts = append(hosts, sel.Host)
		want = func(host string) bool { return host == sel.Host }
	}
	var mu sync.Mutex
	keep := func(host string, value []byte) {
		b, err := DecodeBeacon(host, value)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			v.Unreadable[host] = err.Error()
		} else {
			v.Beacons[host] = b
		}
	}
	// a beacon over the bound is never read whole: its host reads
	// unreadable, naming the size
	tooLarge := func(big *store.TooLargeError) {
		mu.Lock()
		defer mu.Unlock()
		v.Unreadable[strings.TrimPrefix(big.Key, store.BeaconPrefix)] = tooLargeCause(big.Size)
	}
	var listErr error
	if !sel.all() && len(hosts) <= selectedAtMost {
		for _, host := range hosts {
			if store.ValidateKey(store.BeaconPrefix+host) != nil {
				continue // no such key can be stored
			}
			o, err := store.GetBounded(ctx, st, store.BeaconPrefix+host, MaxBytes)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			var big *store.TooLargeError
			if errors.As(err, &big) {
				tooLarge(big)
				continue
			}
			if err != nil {
				listErr = err
				break
			}
			keep(host, o.Value)
		}
	} else {
		// Each beacon is decoded as it is read, on every processor the
		// process may use, from a buffer its reader reuses; one that is
		// not selected is dropped undecoded.
		listErr = store.VisitBounded(ctx, st, store.BeaconPrefix, runtime.GOMAXPROCS(0), MaxBytes, func(o store.Object) {
			host := strings.TrimPrefix(o.Key, store.BeaconPrefix)
			if want == nil || want(host) {
				keep(host, o.Value)
			}
		}, func(big *store.TooLargeError) {
			if host := strings.TrimPrefix(big.Key, store.BeaconPrefix); want == nil || want(host) {
				tooLarge(big)
			}
		})
	}
	if !got {
		r = <-reg
	}
	if r.err != nil {
		return nil, r.err
	}
	if listErr != nil {
		return nil, fmt.Errorf("list beacons: %w", listErr)
	}
	v.Document, v.declared, v.Outline, v.Meta = r.doc, r.decl, r.outline, r.meta
	return v, nil
}

// MaxBytes bounds one beacon as stored, at publish and at read: a host
// reporting every declared service and every loaded unit stays far below
// it (20 services take about 10 KB), and a reader never loads more than this
// of a host's beacon.
const MaxBytes = 4 << 20

// tooLargeCause is why a beacon of size bytes (or more) is unreadable.
func tooLargeCause(size int64) string {
	return fmt.Sprintf("the beacon is %d bytes or more, over the %d-byte limit (docs/limits.md)", size, MaxBytes)
}

// DecodeBeacon reads the beacon stored for host. It refuses a document
// that is not a beacon of this format or that names another host, and it
// reads every unit state it does not know as unknown, saying so in the
// unit's sentence: a host's own words never become a verdict the reader
// does not define. The error says why the beacon is unreadable.
func DecodeBeacon(host string, value []byte) (*Beacon, error) {
	if len(value) > MaxBytes {
		return nil, errors.New(tooLargeCause(int64(len(value))))
	}
	var b Beacon
	// The reports are decoded into a slice sized from the bytes (an upper
	// bound: every report names its unit), so the decoder does not grow it
	// one doubling at a time: at fleet size that growth was a third of
	// what reading the beacons allocated.
	n := min(bytes.Count(value, unitKey), maxPresizedReports)
	if n > 0 {
		b.Units = make([]UnitReport, 0, n)
	}
	if err := registry.DecodeStored(value, &b, false); err != nil {
		return nil, err
	}
	if n > 0 && len(b.Units) == 0 && cap(b.Units) == n {
		b.Units = nil // the beacon has no "units": it decodes as it did unsized
	}
	return checkDecoded(host, &b)
}

// unitKey starts the unit name of every report in a beacon.
var unitKey = []byte(`"unit":`)

// maxPresizedReports bounds what the bytes of one beacon can make the
// reader allocate before decoding.
const maxPresizedReports = 4096

// checkDecoded is DecodeBeacon's judgement of a decoded beacon.
func checkDecoded(host string, b *Beacon) (*Beacon, error) {
	if b.Kind != Kind || b.Version != FormatVersion {
		return nil, fmt.Errorf("kind %q version %d is not %s version %d", b.Kind, b.Version, Kind, FormatVersion)
	}
	if b.Host != host {
		return nil, fmt.Errorf("the beacon stored for %q names host %q", host, b.Host)
	}
	for _, reps := range [][]UnitReport{b.Units, b.Undeclared} {
		for i := range reps {
			if !knownState(reps[i].State) {
				reps[i].Sentence = fmt.Sprintf("the beacon reports state %q, which the reader does not know", reps[i].State)
				reps[i].State = StateUnknown
			}
		}
	}
	return b, nil
}

// knownState reports whether s is a verdict a beacon may publish.
func knownState(s string) bool {
	switch s {
	case StateActive, StateInactive, StateFailed, StateFailing, StateMissing, StateMasked, StateUnobserved:
		return true
	}
	return false
}

// FreshnessKind is the reader's verdict on a host's beacon. Callers switch
// on it, never on Freshness.Reason, which is words for people.
type FreshnessKind int

const (
	// FreshnessMissing: the host never published, or its beacon expired.
	// It is the zero value: a Freshness nobody judged trusts nothing.
	FreshnessMissing FreshnessKind = iota
	// FreshnessFresh: the beacon is within its staleness bound; its rows
	// say what the host reported.
	FreshnessFresh
	// FreshnessStale: the beacon is older than its bound.
	FreshnessStale
	// FreshnessUnreadable: a beacon is stored but could not be read.
	FreshnessUnreadable
	// FreshnessSkewed: the beacon is dated further in the future than
	// MaxClockSkew allows (the publisher's clock runs ahead).
	FreshnessSkewed
)

// String names the kind as the tables print it.
func (k FreshnessKind) String() string {
	switch k {
	case FreshnessFresh:
		return "fresh"
	case FreshnessStale:
		return "stale"
	case FreshnessUnreadable:
		return "unreadable"
	case FreshnessSkewed:
		return "skewed"
	}
	return "missing"
}

// Freshness says how far a host's beacon can be trusted.
type Freshness struct {
	// Kind is the verdict; Present and Stale say it in the JSON form
	// (Present: any kind but missing; Stale: stale, unreadable or skewed).
	Kind FreshnessKind `json:"-"`
	// Present is false when the host never published (or its beacon expired).
	Present bool `json:"present"`
	// Stale is true when the beacon is older than its bound, or unreadable.
	Stale             bool       `json:"stale"`
	At                *time.Time `json:"at,omitempty"`
	AgeSeconds        float64    `json:"age_seconds,omitempty"`
	StaleAfterSeconds float64    `json:"stale_after_seconds,omitempty"`
	Pass              int64      `json:"pass,omitempty"`
	// SkewSeconds is how far in the future the beacon is dated (the
	// publisher's clock ahead of the reader's); zero when it is not.
	SkewSeconds float64 `json:"skew_seconds,omitempty"`
	// Reason says why rows of this host read unknown.
	Reason string `json:"reason,omitempty"`
}

// Reader-side limits on what a beacon may claim about its own freshness.
const (
	// MaxStaleBound caps the staleness bound a beacon sets for itself (its
	// stale_after_seconds, or three intervals): a host cannot make its
	// rows trusted for longer, whatever it writes.
	MaxStaleBound = 10 * time.Minute
	// MaxClockSkew is how far in the future a beacon may be dated and still
	// be read (as age zero); beyond it the beacon reads unknown, naming the
	// skew.
	MaxClockSkew = 30 * time.Second
)

// Freshness of host's beacon at v.Now. Staleness is the reader's judgement:
// the beacon's own bound counts only up to MaxStaleBound (a bound given to
// the View overrides it), and a beacon dated more than MaxClockSkew ahead of
// the reader's clock is stale.
func (v *View) Freshness(host string) Freshness {
	if cause, ok := v.Unreadable[host]; ok {
		return Freshness{Kind: FreshnessUnreadable, Present: true, Stale: true, Reason: "beacon unreadable: " + cause}
	}
	b, ok := v.Beacons[host]
	if !ok {
		return Freshness{Kind: FreshnessMissing, Reason: "no beacon from " + host}
	}
	// The bound and the age are judged without arithmetic that can wrap:
	// a beacon's seconds are clamped before they become a Duration, and its
	// date is compared with the reader's clock by Sub in the direction
	// whose saturation keeps its sign (a beacon dated centuries ahead reads
	// as far ahead as a Duration reaches, never as behind).
	bound := v.StaleAfter
	if bound <= 0 {
		bound = secondsUpTo(b.StaleAfterSeconds, MaxStaleBound)
	}
	if bound <= 0 {
		bound = min(3*secondsUpTo(b.IntervalSeconds, MaxStaleBound), MaxStaleBound)
	}
	if bound <= 0 {
		bound = MaxStaleBound
	}
	at := b.At
	f := Freshness{Kind: FreshnessFresh, Present: true, At: &at, StaleAfterSeconds: bound.Seconds(), Pass: b.Pass}
	if b.At.After(v.Now) {
		ahead := b.At.Sub(v.Now) // saturates at the largest Duration, never negative
		f.SkewSeconds = round1(ahead.Seconds())
		if ahead > MaxClockSkew {
			f.Kind, f.Stale = FreshnessSkewed, true
			f.Reason = fmt.Sprintf("beacon is dated %s in the future, beyond the %s of clock skew a reader allows", ahead.Round(time.Second), MaxClockSkew)
		}
		return f
	}
	age := v.Now.Sub(b.At) // saturates at the largest Duration, never negative
	f.AgeSeconds = round1(age.Seconds())
	if age > bound {
		f.Kind, f.Stale = FreshnessStale, true
		f.Reason = fmt.Sprintf("beacon is %s old, stale after %s", age.Round(time.Second), bound.Round(time.Second))
	}
	return f
}

// secondsUpTo is s seconds as a Duration, clamped to ceiling: 0 (not
// given) for zero, negative, NaN and infinity, ceiling for any finite value
// at or past it, so no conversion of a huge float wraps.
func secondsUpTo(s float64, ceiling time.Duration) time.Duration {
	switch {
	case !(s > 0) || math.IsInf(s, 1):
		return 0
	case s >= ceiling.Seconds():
		return ceiling
	}
	return time.Duration(s * float64(time.Second))
}

func round1(x float64) float64 { return float64(int64(x*10+0.5)) / 10 }

// Row is one declared service on one host as the read half reports it.
type Row struct {
	Host       string     `json:"host"`
	Service    string     `json:"service,omitempty"`
	Unit       string     `json:"unit"`
	Product    string     `json:"product,omitempty"`
	State      string     `json:"state"`
	Sub        string     `json:"sub,omitempty"`
	PID        int        `json:"pid,omitempty"`
	LastExit   *int       `json:"last_exit,omitempty"`
	Starts     int        `json:"starts,omitempty"`
	Sentence   string     `json:"sentence,omitempty"`
	LastStderr string     `json:"last_stderr,omitempty"`
	Incomplete bool       `json:"declaration_incomplete,omitempty"`
	Beacon     Freshness  `json:"beacon"`
	Answering  *Answering `json:"answering,omitempty"`
	// Protocol is the service-protocol evidence, when one is declared.
	Protocol *Protocol `json:"protocol,omitempty"`
	// File is the host's comparison of the unit file with the
	// declaration's rendering (drift), from a fresh beacon that carries
	// one; nil when nothing is known of it.
	File *FileCheck `json:"file,omitempty"`
}

// Drifted reports whether the fresh beacon says the unit's file is absent
// or is not what ensure would write.
func (r Row) Drifted() bool { return r.File != nil && r.File.Drift }

// Rows joins every declaration (of host, or of all hosts when host is "")
// with its host's beacon. A stale or absent beacon makes the row unknown.
// The work is proportional to the rows returned: one host's rows are found
// through an index of the targets, never by scanning them.
func (v *View) Rows(host string) []Row {
	if host != "" {
		t, ok := v.target(host)
		if !ok {
			return []Row{}
		}
		return v.appendRows(make([]Row, 0, len(t.Services)), t)
	}
	decl := v.declarations()
	// each target's rows have their own stretch, so runs of targets are
	// joined on every processor
	at := make([]int, len(decl)+1)
	for i := range decl {
		at[i+1] = at[i] + len(decl[i].Services)
	}
	rows := make([]Row, at[len(decl)])
	spread.Runs(len(decl), joinRun, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			v.joinRows(rows[at[i]:at[i]:at[i+1]], &decl[i])
		}
	})
	v.joins += len(decl)
	return rows
}

// joinRun is how many targets one processor joins at a time.
const joinRun = 64

// Declares reports whether the registry declares a target named host.
func (v *View) Declares(host string) bool {
	_, ok := v.target(host)
	return ok
}

// declaredTarget is what the join reads of one target.
type declaredTarget struct {
	Name     string
	Services []declared
}

// declared is what the join reads of one declared service.
type declared = registry.ServiceOutline

// declarationsOf is what the join reads of doc, or of the outline o of it
// when not nil.
func declarationsOf(doc *registry.Document, o *registry.Outline) []declaredTarget {
	out := make([]declaredTarget, len(doc.Targets))
	for i := range doc.Targets {
		t := &doc.Targets[i]
		if o != nil {
			out[i] = declaredTarget{Name: t.Name, Services: o.Services[i]}
		} else {
			out[i] = declaredTarget{Name: t.Name, Services: registry.OutlineOf(t.Services)}
		}
	}
	return out
}

// declarations returns what the join reads of the registry.
func (v *View) declarations() []declaredTarget {
	if v.declared == nil && v.Document != nil {
		v.declared = declarationsOf(v.Document, v.Outline)
	}
	return v.declared
}

// target returns the declared target named name through the index.
func (v *View) target(name string) (*declaredTarget, bool) {
	decl := v.declarations()
	if v.targets == nil {
		v.targets = make(map[string]int, len(decl))
		for i := range decl {
			if _, dup := v.targets[decl[i].Name]; !dup {
				v.targets[decl[i].Name] = i // the first, as Document.Target finds
			}
		}
	}
	i, ok := v.targets[name]
	if !ok {
		return nil, false
	}
	return &decl[i], true
}

// appendRows appends t's rows, each declaration joined with its report in
// t's beacon, to rows.
func (v *View) appendRows(rows []Row, t *declaredTarget) []Row {
	v.joins++
	return v.joinRows(rows, t)
}

// joinRows is appendRows without the count: it changes nothing of v, so
// several goroutines may join their own targets at once.
func (v *View) joinRows(rows []Row, t *declaredTarget) []Row {
	f := v.Freshness(t.Name)
	b := v.Beacons[t.Name]
	var reports reportIndex
	if f.Kind == FreshnessFresh && b != nil {
		reports = indexReports(b.Units)
	}
	for _, s := range t.Services {
		row := Row{Host: t.Name, Service: s.Name, Unit: s.Unit, Product: s.Product, Incomplete: s.Incomplete(), Beacon: f, State: StateUnknown}
		if f.Kind == FreshnessFresh && b != nil {
			if rep := reports.find(s); rep != nil {
				row.State, row.Sub, row.PID, row.LastExit = rep.State, rep.Sub, rep.PID, rep.LastExit
				row.Starts, row.Sentence, row.LastStderr, row.Answering = rep.Starts, rep.Sentence, rep.LastStderr, rep.Answering
				row.Protocol, row.File = rep.Protocol, rep.File
			} else {
				// The beacon is fresh but predates the declaration.
				row.Beacon.Reason = "the beacon does not report this declaration yet"
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// reportIndex finds a beacon's report of a declaration: by a scan while
// the beacon is small, through a map once scanning would cost more than
// building it, so that a host's join stays proportional to its rows.
type reportIndex struct {
	reps  []UnitReport
	byKey map[[2]string]int
}

// scanReportsAtMost is the largest beacon whose reports are scanned.
const scanReportsAtMost = 32

func indexReports(reps []UnitReport) reportIndex {
	ix := reportIndex{reps: reps}
	if len(reps) > scanReportsAtMost {
		ix.byKey = make(map[[2]string]int, len(reps))
		for i := len(reps) - 1; i >= 0; i-- { // the first report of a key wins, as a scan finds
			ix.byKey[[2]string{reps[i].Service, reps[i].Unit}] = i
		}
	}
	return ix
}

func (ix reportIndex) find(s declared) *UnitReport {
	if ix.byKey != nil {
		if i, ok := ix.byKey[[2]string{s.Name, s.Unit}]; ok {
			return &ix.reps[i]
		}
		return nil
	}
	for i := range ix.reps {
		if ix.reps[i].Service == s.Name && ix.reps[i].Unit == s.Unit {
			return &ix.reps[i]
		}
	}
	return nil
}

// Problem reports whether the row needs attention, by the rules registry
// doctor reports a declaration by: any state but active (unknown included:
// nothing confirms the unit runs), an incomplete declaration, a unit file
// the host says drifted, or an answering question that stood or was
// answered unsuccessfully.
func (r Row) Problem() bool {
	if r.State != StateActive || r.Incomplete || r.Drifted() {
		return true
	}
	a := r.Answering
	return a != nil && (a.State == AnswerStood || (a.Finished != nil && a.Finished.Answered != nil && !a.Finished.Answered.Successful))
}

// Undeclared lists, per fresh beacon, the loaded units no declaration
// covers. Hosts whose beacon is stale contribute nothing (and say so in
// their Freshness).
func (v *View) Undeclared(host string) []Row {
	var rows []Row
	for _, name := range v.hostNames() {
		if host != "" && name != host {
			continue
		}
		f := v.Freshness(name)
		b := v.Beacons[name]
		if b == nil || f.Kind != FreshnessFresh {
			continue
		}
		for _, u := range b.Undeclared {
			rows = append(rows, Row{Host: name, Unit: u.Unit, State: u.State, Sub: u.Sub, PID: u.PID, LastExit: u.LastExit, Starts: u.Starts, Sentence: u.Sentence, Beacon: f})
		}
	}
	return rows
}

// unfresh lists the hosts (host, or every one) Undeclared skips because
// their beacon is missing or not fresh.
func (v *View) unfresh(host string) []string {
	var names []string
	for _, name := range v.hostNames() {
		if (host == "" || name == host) && (v.Beacons[name] == nil || v.Freshness(name).Kind != FreshnessFresh) {
			names = append(names, name)
		}
	}
	return names
}

// hostNames lists declared targets and every host that published, sorted
// with declared targets first in document order.
func (v *View) hostNames() []string {
	seen := map[string]bool{}
	var names []string
	for _, t := range v.declarations() {
		seen[t.Name] = true
		names = append(names, t.Name)
	}
	var extra []string
	for h := range v.Beacons {
		if !seen[h] {
			extra = append(extra, h)
		}
	}
	for h := range v.Unreadable {
		if !seen[h] && v.Beacons[h] == nil {
			extra = append(extra, h)
		}
	}
	sort.Strings(extra)
	return append(names, extra...)
}

// HostHealth is one host's line in `host health`.
type HostHealth struct {
	Host         string         `json:"host"`
	Declared     bool           `json:"declared"`
	Beacon       Freshness      `json:"beacon"`
	StadoVersion string         `json:"stado_version,omitempty"`
	Counts       map[string]int `json:"counts"`
	Undeclared   int            `json:"undeclared"`
	Refusals     []Refusal      `json:"refusals,omitempty"`
	Identity     *Identity      `json:"identity,omitempty"`
	// PeerRecoveries are the standings this host saw on other hosts.
	PeerRecoveries []PeerRecovery `json:"peer_recoveries,omitempty"`
}

// Health reports every host (or one).
// Each host costs its own rows: its declaration is found through an index.
func (v *View) Health(host string) []HostHealth {
	var out []HostHealth
	var rows []Row
	for _, name := range v.hostNames() {
		if host != "" && name != host {
			continue
		}
		t, declared := v.target(name)
		h := HostHealth{Host: name, Declared: declared, Beacon: v.Freshness(name), Counts: map[string]int{}}
		if declared {
			rows = v.appendRows(rows[:0], t)
			for _, r := range rows {
				h.Counts[r.State]++
			}
		}
		if b := v.Beacons[name]; b != nil {
			h.StadoVersion = b.StadoVersion
			h.Undeclared = len(b.Undeclared)
			h.Refusals = b.Refusals
			h.PeerRecoveries = b.PeerRecoveries
			id := b.Identity
			h.Identity = &id
		}
		out = append(out, h)
	}
	return out
}

// Finding is one thing `registry doctor` says needs attention.
type Finding struct {
	Host    string `json:"host"`
	Service string `json:"service,omitempty"`
	Unit    string `json:"unit,omitempty"`
	// Code: missing, failing, failed, inactive, undeclared,
	// declaration_incomplete, stale_beacon, no_beacon, unreadable_beacon,
	// undeclared_host, host_refusal, answering_unsuccessful, answering_stood,
	// product_setting_overridden.
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Doctor diffs declarations against observations for every host. Each
// target is joined with its beacon once: the work is proportional to the
// rows.
func (v *View) Doctor() []Finding {
	var out []Finding
	add := func(f Finding) { out = append(out, f) }
	var rows []Row
	decl := v.declarations()
	for i := range decl {
		t := &decl[i]
		f := v.Freshness(t.Name)
		switch f.Kind {
		case FreshnessMissing:
			add(Finding{Host: t.Name, Code: "no_beacon", Message: f.Reason})
		case FreshnessUnreadable:
			add(Finding{Host: t.Name, Code: "unreadable_beacon", Message: f.Reason})
		case FreshnessStale, FreshnessSkewed:
			add(Finding{Host: t.Name, Code: "stale_beacon", Message: f.Reason})
		}
		for _, s := range t.Services {
			if s.Incomplete() {
				msg := "declaration names a unit but no program: it cannot be reinstalled"
				if s.IncompleteReason != "" {
					msg += " (" + s.IncompleteReason + ")"
				}
				add(Finding{Host: t.Name, Service: s.Name, Unit: s.Unit, Code: "declaration_incomplete", Message: msg})
			}
		}
		rows = v.appendRows(rows[:0], t)
		for _, r := range rows {
			switch r.State {
			case StateMissing:
				add(Finding{Host: r.Host, Service: r.Service, Unit: r.Unit, Code: "missing", Message: "declared but not loaded on the host"})
			case StateMasked:
				add(Finding{Host: r.Host, Service: r.Service, Unit: r.Unit, Code: "masked", Message: "declared but masked on the host: nothing starts it until it is unmasked"})
			case StateFailing:
				add(Finding{Host: r.Host, Service: r.Service, Unit: r.Unit, Code: "failing", Message: r.Sentence})
			case StateFailed:
				add(Finding{Host: r.Host, Service: r.Service, Unit: r.Unit, Code: "failed", Message: failedMessage(r)})
			case StateInactive:
				add(Finding{Host: r.Host, Service: r.Service, Unit: r.Unit, Code: "inactive", Message: "declared but not running"})
			}
			if a := r.Answering; a != nil {
				switch {
				case a.State == AnswerStood:
					add(Finding{Host: r.Host, Service: r.Service, Unit: r.Unit, Code: "answering_stood", Message: fmt.Sprintf("question unanswered for %.0fs (bound %.0fs)", a.WaitedSeconds, a.BoundSeconds)})
				case a.Finished != nil && a.Finished.Answered != nil && !a.Finished.Answered.Successful:
					add(Finding{Host: r.Host, Service: r.Service, Unit: r.Unit, Code: "answering_unsuccessful", Message: fmt.Sprintf("answered %d: %s", a.Finished.Answered.Status, a.Finished.Answered.Detail)})
				}
			}
		}
		if b := v.Beacons[t.Name]; b != nil && f.Kind == FreshnessFresh {
			for _, ref := range b.Refusals {
				add(Finding{Host: t.Name, Code: "host_refusal", Message: ref.Code + ": " + ref.Message})
			}
		}
	}
	for _, r := range v.Undeclared("") {
		add(Finding{Host: r.Host, Unit: r.Unit, Code: "undeclared", Message: "loaded (" + r.State + ") but no declaration covers it"})
	}
	for _, name := range v.hostNames() {
		if _, declared := v.target(name); !declared {
			add(Finding{Host: name, Code: "undeclared_host", Message: "publishes a beacon but the registry declares no such target"})
		}
	}
	return out
}

func failedMessage(r Row) string {
	msg := "failed"
	if r.LastExit != nil {
		msg += fmt.Sprintf(": last exit %d", *r.LastExit)
	}
	if r.LastStderr != "" {
		msg += ": " + r.LastStderr
	}
	return msg
}
