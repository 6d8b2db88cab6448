package beacon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

// Observer reads unit state on this host. The units package's Manager is
// adapted to it (UnitsObserver) by package hostprocess; tests of the
// runner use the real systemd testbed.
type Observer interface {
	// Observe returns one report per unit, in the order given, reading
	// them with as few queries as the init system allows. A unit that is
	// not loaded is reported missing, not as an error.
	Observe(ctx context.Context, units []string) ([]UnitReport, error)
	// Loaded lists the service units the init system has loaded; it may
	// leave out those in except (the declared units, which the pass reads
	// anyway), so that it asks the init system of fewer.
	Loaded(ctx context.Context, except map[string]bool) ([]string, error)
	// LastLine returns the last line a unit wrote to its log, "" if none.
	LastLine(ctx context.Context, unit string) (string, error)
}

// Contributor adds to a pass: the answering probes and the peer pass of
// package repair are contributors. Contribute must not block on a slow
// service: it starts work in goroutines and reads their records next pass.
type Contributor interface {
	Contribute(ctx context.Context, p *Pass)
}

// PassObserver hears of every pass RunPass ends, published or not: the
// metrics of `stado host run` are one. PassEnded is called on the pass's
// goroutine after the publication; it must not block and must not change
// the pass it is handed.
type PassObserver interface {
	PassEnded(PassReport)
}

// PassReport is one ended pass as a PassObserver hears it.
type PassReport struct {
	// Pass is the pass with its document, target and beacon as composed.
	Pass *Pass
	// Took is the pass's length on the runner's clock, from its start to
	// the end of its publication.
	Took time.Duration
	// PublishErr is the store's refusal of the beacon; nil when published.
	PublishErr error
	// Slimmed is set when the beacon was over MaxBytes and was published
	// without its reports (the beacon_too_large refusal).
	Slimmed bool
}

// Pass is one pass in progress, handed to every contributor.
type Pass struct {
	Number int64
	At     time.Time
	Host   string
	// Document is the registry as read this pass; nil when unreadable.
	// While the registry's revision does not move, every pass is handed
	// the same document: contributors read it and never change it.
	Document *registry.Document
	// Target is this host's target in Document; nil when not declared.
	Target *registry.Target
	// Beacon is the beacon being composed. Contributors add answering
	// blocks to its units, peer recoveries and refusals.
	Beacon *Beacon
}

// Unit returns the report of the declared service named service, or nil.
func (p *Pass) Unit(service string) *UnitReport {
	for i := range p.Beacon.Units {
		if p.Beacon.Units[i].Service == service {
			return &p.Beacon.Units[i]
		}
	}
	return nil
}

// Refuse records something the pass could not do.
func (p *Pass) Refuse(code, subject, format string, args ...any) {
	p.Beacon.Refusals = append(p.Beacon.Refusals, Refusal{Code: code, Subject: subject, Message: fmt.Sprintf(format, args...)})
}

// Config holds the timing knobs of a runner; tests shrink them.
type Config struct {
	// Interval between passes; default 15 s.
	Interval time.Duration
	// StaleAfter is the age after which readers distrust the beacon;
	// default 3 × Interval.
	StaleAfter time.Duration
	// TTL, when positive, makes the store expire the beacon by itself
	// (an etcd lease). The file store keeps beacons so readers can show
	// their age.
	TTL time.Duration
}

func (c Config) withDefaults() Config {
	if c.Interval <= 0 {
		c.Interval = 15 * time.Second
	}
	if c.StaleAfter <= 0 {
		c.StaleAfter = 3 * c.Interval
	}
	return c
}

// Runner composes and publishes this host's beacon, pass after pass.
type Runner struct {
	Host         string
	Store        store.Store
	Observer     Observer
	Contributors []Contributor
	Config       Config
	Identity     Identity
	Version      string
	// ReleaseRoot is this host's release directory (release.Root); each
	// pass reads its state file into the beacon's releases block, and the
	// host API serves chunks to peers from its installed images. Empty
	// reads none and serves chunks from the store only.
	ReleaseRoot string
	Logger      *slog.Logger
	// Now is the clock every pass reads; nil means time.Now.
	Now func() time.Time
	// NewTicker makes what Run waits on between passes: the channel its
	// ticks arrive on, and the function that stops it. nil means a
	// time.Ticker. A test hands in a channel it feeds itself, so it drives
	// pass after pass without sleeping through an interval.
	NewTicker func(d time.Duration) (ticks <-chan time.Time, stop func())
	// Notifier, when not nil, hears from Run how the pass loop fares and
	// tells the service manager (READY=1, WATCHDOG=1, STATUS=); see
	// Notifier. RunPass alone never uses it.
	Notifier *Notifier
	// PassObserver, when not nil, is told of every pass RunPass ends.
	PassObserver PassObserver
	// MetricsHandler, when not nil, is served by the host API at GET
	// /metrics (the host process's Prometheus metrics, package metrics).
	MetricsHandler http.Handler
	// Files, when not nil, compares every declared unit's file with its
	// rendering each pass (the reports' File); nil compares none.
	Files *UnitFiles

	mu      sync.Mutex
	pass    int64
	pending []Refusal // refusals met after the last publish
	lasting []Refusal // refusals every beacon carries (see Persist)
	lastDoc *registry.Document
	lastRev int64 // the store revision lastDoc was decoded from; 0: none
	// published is the store revision of this runner's last beacon: a
	// stored beacon at that revision is its own, not another machine's
	published int64
}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Runner) newTicker(d time.Duration) (<-chan time.Time, func()) {
	if r.NewTicker != nil {
		return r.NewTicker(d)
	}
	t := time.NewTicker(d)
	return t.C, t.Stop
}

func (r *Runner) logger() *slog.Logger {
	if r.Logger != nil {
		return r.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// Persist makes every later beacon carry ref, for a condition that lasts
// as long as the process (such as a listener that could not be opened).
func (r *Runner) Persist(ref Refusal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lasting = append(r.lasting, ref)
}

// Run runs a pass at once and then one per tick of a ticker of the
// configured interval (NewTicker) until ctx ends. It returns nil when ctx
// is cancelled; a pass never ends it. A pass that outlasts the interval
// delays the next one rather than piling passes up.
//
// With a Notifier, the end of every pass is reported (READY=1 after the
// first, then WATCHDOG=1 and STATUS=), and while Run waits for the next
// tick it pets the watchdog every half of its interval, and once more just
// before it starts a pass. Nothing is sent while a pass runs, so one that
// hangs longer than the watchdog's interval gets the process restarted. A
// pass interval longer than the watchdog's is logged once at start: the
// idle petting keeps the process alive between such passes.
func (r *Runner) Run(ctx context.Context) error {
	cfg := r.Config.withDefaults()
	ticks, stop := r.newTicker(cfg.Interval)
	defer stop()
	n := r.Notifier
	var pets <-chan time.Time
	if every := n.petEvery(); every > 0 {
		if cfg.Interval > n.Watchdog {
			r.logger().Warn("the pass interval is longer than the systemd watchdog; it is petted between passes, so only a pass that hangs past it restarts the process",
				"interval", cfg.Interval, "watchdog", n.Watchdog)
		}
		t := time.NewTicker(every)
		defer t.Stop()
		pets = t.C
	}
	for {
		n.idle(r.logger())
		b, err := r.RunPass(ctx)
		if err != nil && ctx.Err() == nil {
			r.logger().Warn("beacon pass", "err", err)
		}
		if ctx.Err() == nil {
			n.passEnded(r.logger(), b, err)
		}
	wait:
		for {
			select {
			case <-ctx.Done():
				n.stopping(r.logger())
				return nil
			case <-pets:
				n.idle(r.logger())
			case <-ticks:
				break wait
			}
		}
	}
}

// RunPass runs one pass: read the registry, observe the declared and the
// loaded units in one batch, let every contributor add to the beacon, and
// publish it under beacons/<host>. A store that cannot be written is kept
// as a refusal for the next beacon; the returned error says so too.
func (r *Runner) RunPass(ctx context.Context) (*Beacon, error) {
	cfg := r.Config.withDefaults()
	start := r.now()
	r.mu.Lock()
	r.pass++
	number := r.pass
	carried := r.pending
	r.pending = nil
	r.mu.Unlock()

	b := &Beacon{
		Kind:              Kind,
		Version:           FormatVersion,
		Host:              r.Host,
		Identity:          r.Identity,
		Pass:              number,
		At:                r.now().UTC(),
		IntervalSeconds:   cfg.Interval.Seconds(),
		StaleAfterSeconds: cfg.StaleAfter.Seconds(),
		StadoVersion:      r.Version,
		StoreReads:        store.Reads,
		Units:             []UnitReport{},
	}
	r.mu.Lock()
	b.Refusals = append(b.Refusals, r.lasting...)
	r.mu.Unlock()
	b.Refusals = append(b.Refusals, carried...)
	p := &Pass{Number: number, At: b.At, Host: r.Host, Beacon: b}

	doc, err := r.loadRegistry(ctx)
	switch {
	case err == nil:
	case errors.Is(err, store.ErrNotFound):
		doc = &registry.Document{Version: 1}
		r.lastDoc, r.lastRev = doc, 0
	default:
		p.Refuse("registry_unreadable", store.RegistryKey, "read registry: %v", err)
		doc = r.lastDoc // the last document read, if any
	}
	p.Document = doc
	if doc != nil {
		p.Target, _ = doc.Target(r.Host)
	}
	if p.Target == nil && doc != nil {
		p.Refuse("host_not_declared", r.Host, "the registry declares no target %q", r.Host)
	}
	r.observe(ctx, p)
	if r.Files != nil {
		r.Files.Check(ctx, p)
	}
	if r.ReleaseRoot != "" {
		b.Releases = ReadReleases(r.ReleaseRoot)
	}
	for _, c := range r.Contributors {
		c.Contribute(ctx, p)
	}
	r.checkIdentity(ctx, p)
	slimmed, err := r.publish(ctx, b, cfg)
	if r.PassObserver != nil {
		r.PassObserver.PassEnded(PassReport{Pass: p, Took: r.now().Sub(start), PublishErr: err, Slimmed: slimmed})
	}
	if err != nil {
		ref := Refusal{Code: "store_unwritable", Subject: store.BeaconPrefix + r.Host, Message: err.Error()}
		r.mu.Lock()
		r.pending = append(r.pending, ref)
		r.mu.Unlock()
		return b, err
	}
	return b, nil
}

// loadRegistry reads the registry and decodes it only when its store
// revision differs from the one last decoded: the document is the whole
// fleet's, and it changes far less often than a pass runs. On a
// store.RevisionReader an unchanged registry is not read at all, only its
// revision. Its errors are registry.Load's.
func (r *Runner) loadRegistry(ctx context.Context) (*registry.Document, error) {
	if _, ok := r.Store.(store.RevisionReader); ok && r.lastDoc != nil && r.lastRev != 0 {
		if rev, err := store.Revision(ctx, r.Store, store.RegistryKey); err == nil && rev == r.lastRev {
			return r.lastDoc, nil
		}
	}
	obj, err := r.Store.Get(ctx, store.RegistryKey)
	if err != nil {
		return nil, fmt.Errorf("load registry: %w", err)
	}
	if r.lastDoc != nil && r.lastRev != 0 && obj.Revision == r.lastRev {
		return r.lastDoc, nil
	}
	doc, _, err := registry.DecodeObject(obj)
	if err != nil {
		return nil, err
	}
	r.lastDoc, r.lastRev = doc, obj.Revision
	return doc, nil
}

// observe fills the unit reports of the declared services and lists the
// undeclared loaded units, all in one Observe call.
func (r *Runner) observe(ctx context.Context, p *Pass) {
	var declared []registry.Service
	if p.Target != nil {
		declared = p.Target.Services
	}
	covered := map[string]bool{}
	names := make([]string, 0, len(declared))
	for _, s := range declared {
		covered[s.Unit] = true
		names = append(names, s.Unit)
	}
	var undeclared []string
	if r.Observer == nil {
		p.Refuse("observer_unavailable", r.Host, "no init system to observe")
		return
	}
	loaded, err := r.Observer.Loaded(ctx, covered)
	if err != nil {
		p.Refuse("units_unreadable", r.Host, "list loaded units: %v", err)
	}
	for _, u := range loaded {
		if !covered[u] {
			undeclared = append(undeclared, u)
		}
	}
	sort.Strings(undeclared)
	all := append(append([]string(nil), names...), undeclared...)
	if len(all) == 0 {
		return
	}
	reports, err := r.observeUnits(ctx, p, all, undeclared)
	if err != nil || len(reports) != len(all) {
		if err == nil {
			err = fmt.Errorf("observer returned %d reports for %d units", len(reports), len(all))
		}
		p.Refuse("units_unreadable", r.Host, "observe units: %v", err)
		return
	}
	for i, s := range declared {
		rep := reports[i]
		rep.Service = s.Name
		rep.Unit = s.Unit
		if rep.State == StateFailed || rep.State == StateFailing {
			if line, err := r.lastLine(ctx, p.Target, s); err == nil {
				rep.LastStderr = line
			}
		}
		p.Beacon.Units = append(p.Beacon.Units, rep)
	}
	for i := range undeclared {
		rep := reports[len(declared)+i]
		rep.Service = ""
		p.Beacon.Undeclared = append(p.Beacon.Undeclared, rep)
	}
}

// checkIdentity warns when another machine publishes as this host: a
// fresh beacon under our key from another identity.
func (r *Runner) checkIdentity(ctx context.Context, p *Pass) {
	key := store.BeaconPrefix + r.Host
	if _, ok := r.Store.(store.RevisionReader); ok && r.published != 0 {
		if rev, err := store.Revision(ctx, r.Store, key); err == nil && rev == r.published {
			return // the one this runner published last, not read again
		}
	}
	obj, err := store.GetBounded(ctx, r.Store, key, MaxBytes)
	if err != nil || (r.published != 0 && obj.Revision == r.published) {
		return // none, or the one this runner published last
	}
	// the fields the check reads, not the reports
	var prev struct {
		Identity          Identity  `json:"identity"`
		At                time.Time `json:"at"`
		StaleAfterSeconds float64   `json:"stale_after_seconds"`
	}
	if json.Unmarshal(obj.Value, &prev) != nil {
		return
	}
	same := prev.Identity.MachineID == r.Identity.MachineID && prev.Identity.PID == r.Identity.PID &&
		prev.Identity.Started.Equal(r.Identity.Started) && prev.Identity.Hostname == r.Identity.Hostname
	fresh := p.At.Sub(prev.At) < time.Duration(prev.StaleAfterSeconds*float64(time.Second))
	if !same && fresh && prev.Identity.PID != 0 && (prev.Identity.MachineID != r.Identity.MachineID || prev.Identity.Hostname != r.Identity.Hostname) {
		p.Refuse("identity_conflict", r.Host,
			"another machine (hostname %s, machine-id %s, pid %d) published as %s %s ago",
			prev.Identity.Hostname, prev.Identity.MachineID, prev.Identity.PID, r.Host, p.At.Sub(prev.At).Round(time.Second))
	}
}

// publish puts b under beacons/<host>; slimmed says it was over MaxBytes
// and went out without its reports.
func (r *Runner) publish(ctx context.Context, b *Beacon, cfg Config) (slimmed bool, err error) {
	data, err := json.Marshal(b)
	if err != nil {
		return false, fmt.Errorf("encode beacon: %w", err)
	}
	if len(data) > MaxBytes {
		slimmed = true
		// Over the bound readers hold it to: publish what the pass is and
		// why its reports are missing, so this host reads unknown with the
		// cause instead of going stale without one.
		slim := *b
		slim.Units, slim.Undeclared, slim.PeerRecoveries = nil, nil, nil
		slim.Refusals = []Refusal{{Code: CodeBeaconTooLarge, Subject: r.Host,
			Message: fmt.Sprintf("this pass's beacon was %d bytes, over the %d-byte limit: its reports are left out (docs/limits.md)", len(data), MaxBytes)}}
		if data, err = json.Marshal(&slim); err != nil {
			return slimmed, fmt.Errorf("encode beacon: %w", err)
		}
	}
	rev, err := r.Store.Put(ctx, store.BeaconPrefix+r.Host, data, store.PutOptions{TTL: cfg.TTL})
	if err != nil {
		return slimmed, fmt.Errorf("publish beacon %s: %w", store.BeaconPrefix+r.Host, err)
	}
	r.published = rev
	return slimmed, nil
}
