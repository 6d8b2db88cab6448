package autonomy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wisent/stado/alert"
	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/fleet"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/release/rollout"
	"github.com/wisent/stado/store"
)

// Options are one cycle's settings.
type Options struct {
	// Mode is registry.AutonomyReport or registry.AutonomyEnforce.
	Mode string
	// Requested caps of the command line (enforce mode).
	Requested Requested
	// LeaseTTL is the enforcer lease's TTL; zero means DefaultLeaseTTL.
	LeaseTTL time.Duration
	// Settle and Wait are ensure's for the actions (zero: its defaults).
	Settle, Wait time.Duration
	// StaleAfter, when positive, overrides every beacon's staleness bound.
	StaleAfter time.Duration
	// HistoryLimit bounds the stored cycles; zero means HistoryLimit.
	HistoryLimit int
}

// Runner runs cycles against one store.
type Runner struct {
	Store store.Store
	// Cache, when not nil, is where the read half records the registry it
	// validated (beacon.RegistryCache): a cycle over the same stored bytes
	// as the last one's decodes them without validating them again.
	Cache *beacon.RegistryCache
	// Connect opens the host connections of the sweep, then of each host
	// acted on, and returns the func that closes them; a repeating run
	// hands the same kept set every time with a close that does nothing.
	Connect func() (fleet.Connector, func())
	// Alerter delivers the alerts; nil means the zero Alerter.
	Alerter *alert.Alerter
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Actor acts in enforce mode; nil means a FleetActor over Connect.
	Actor Actor
}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Every runs a cycle (Run) at once and then every interval until ctx ends,
// over one set of host connections: Connect is called once, before the
// first cycle, and its close when ctx ends, so a cycle after the first
// dials nothing. each is called after every cycle with what Run returned
// (a nil cycle when it did not run). r itself is not changed.
func (r *Runner) Every(ctx context.Context, o Options, interval time.Duration, each func(*Cycle, error)) {
	conn, closeConn := r.Connect()
	defer closeConn()
	kept := *r
	kept.Connect = func() (fleet.Connector, func()) { return conn, func() {} }
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		each(kept.Run(ctx, o))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Run runs one cycle and records it. In report mode it makes one call per
// host for the sweep (Runner.plan) and changes nothing on any host or in
// the registry. In enforce mode it first checks the
// registry's authorization (not_authorized) and the caps, then takes the
// store's lease (a *LeaseHeldError when another enforcer holds it); those
// refusals are returned with no cycle recorded. Once planning started, the
// cycle is recorded whatever happens next, and returned with the error of
// the cycle itself (reading the store, the sweep), if any.
func (r *Runner) Run(ctx context.Context, o Options) (*Cycle, error) {
	start := r.now()
	began := time.Now()
	if o.Mode != registry.AutonomyReport && o.Mode != registry.AutonomyEnforce {
		return nil, refusal.New(refusal.Usage, "--mode must be report or enforce, got %q", o.Mode)
	}
	// the catalog (one key, and the shipped catalog parsed once a process)
	// is read while the registry and the beacons are
	type loadedCatalog struct {
		cat *catalog.Catalog
		err error
	}
	catCh := make(chan loadedCatalog, 1)
	go func() {
		c, err := catalog.Load(ctx, r.Store)
		catCh <- loadedCatalog{c, err}
	}()
	// A report cycle plans from an outline of the registry (each service
	// cut to what a plan reads) and decodes whole only the targets its
	// sweep verifies in full (Runner.plan); enforcing renders what it
	// repairs, so it reads the whole document.
	sel := beacon.Selection{Cache: r.Cache, Outline: o.Mode == registry.AutonomyReport}
	view, err := beacon.LoadSelected(ctx, r.Store, start, o.StaleAfter, sel)
	lc := <-catCh
	if err != nil {
		return nil, err
	}
	cat, err := lc.cat, lc.err
	if err != nil {
		return nil, err
	}
	c := &Cycle{Mode: o.Mode, Start: start.UTC(), RegistryRevision: view.Meta.Revision}
	c.Phases.Read = millis(time.Since(began))
	f := &fleet.Fleet{Store: r.Store, Doc: view.Document, Meta: view.Meta, Catalog: cat}

	var lease *Lease
	if o.Mode == registry.AutonomyEnforce {
		if m := view.Document.Autonomy.EffectiveMode(); m != registry.AutonomyEnforce {
			return nil, &refusal.Error{Code: CodeNotAuthorized,
				Message: fmt.Sprintf("the registry (revision %d) authorizes autonomy mode %s, not enforce", view.Meta.Revision, m),
				Hint:    "set autonomy.mode: enforce in the registry document (stado registry push) to authorize enforcing"}
		}
		caps, err := ResolveCaps(view.Document.Autonomy, o.Requested)
		if err != nil {
			return nil, err
		}
		c.Caps = &caps
		ttl := o.LeaseTTL
		if ttl <= 0 {
			ttl = DefaultLeaseTTL
		}
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		lease, err = Acquire(ctx, r.Store, NewHolder(start, ttl), func(err error) { cancel(err) })
		if err != nil {
			return nil, err
		}
		defer lease.Release(context.WithoutCancel(ctx))
		h := lease.Holder()
		c.Holder = &h
	}

	cycleErr := r.plan(ctx, c, f, view)
	if cycleErr == nil && o.Mode == registry.AutonomyEnforce {
		acting := time.Now()
		r.enforce(ctx, c, f, o)
		c.Phases.Enforce = millis(time.Since(acting))
		if lease != nil && lease.Lost() != nil && c.Stopped == "" {
			c.Stopped = lease.Lost().Error()
		}
	}
	if cycleErr != nil {
		c.Error = cycleErr.Error()
	}
	c.Counts, c.Summary = Counts(c.Rows), Summary(c.Rows)
	c.Alerts = r.alert(context.WithoutCancel(ctx), view.Document, c)
	c.End = r.now().UTC()
	if err := Save(context.WithoutCancel(ctx), r.Store, c, o.HistoryLimit); err != nil {
		return c, errors.Join(cycleErr, err)
	}
	return c, cycleErr
}

// plan runs the sweep on its own connections, closed before any action,
// and plans every declared service. The sweep is one call per host: a
// host whose fresh beacon stands in for every declaration (BeaconStands)
// is asked for its reachability only, the others for a full verify.
func (r *Runner) plan(ctx context.Context, c *Cycle, f *fleet.Fleet, view *beacon.View) error {
	planning := time.Now()
	rows := view.Rows("")
	reachOnly := StandingOnBeacons(view.Document, view.Outline, rows)
	if view.Outline != nil {
		// the sweep renders and compares the declarations of the hosts it
		// verifies in full: those are decoded whole
		for i := range view.Document.Targets {
			if !reachOnly(view.Document.Targets[i].Name) {
				if err := view.Outline.Whole(i); err != nil {
					return fmt.Errorf("read registry: %w", err)
				}
			}
		}
	}
	planned := time.Since(planning)
	sweeping := time.Now()
	conn, closeConn := r.Connect()
	sweep := *f
	sweep.Connect = conn
	vr, err := sweep.Verify(ctx, fleet.VerifyOptions{ReachOnly: reachOnly}, nil)
	closeConn()
	c.Phases.Sweep = millis(time.Since(sweeping))
	if err != nil {
		return fmt.Errorf("verify sweep: %w", err)
	}
	planning = time.Now()
	c.Rows = Plan(Input{Doc: view.Document, Outline: view.Outline, Catalog: f.Catalog, Beacons: rows, Verify: vr,
		Releases: rollout.ShowFleet(view, rollout.DeclarationsOf(view.Document), "")})
	c.Phases.Plan = millis(planned + time.Since(planning))
	return nil
}

// StandingOnBeacons says which hosts of doc the sweep asks for
// reachability only: those whose beacon rows (the read half's join,
// rows) stand in for every complete declaration (BeaconStands). An
// incomplete declaration needs no reading: it is refused either way. o,
// when not nil, is the outline doc was decoded as (Input.Outline).
func StandingOnBeacons(doc *registry.Document, o *registry.Outline, rows []beacon.Row) func(host string) bool {
	byHost := make(map[string][]*beacon.Row, len(doc.Targets))
	for i := range rows {
		byHost[rows[i].Host] = append(byHost[rows[i].Host], &rows[i])
	}
	services := outlines(doc, o)
	stands := make(map[string]bool, len(doc.Targets))
	for ti := range doc.Targets {
		t := &doc.Targets[ti]
		ok := true
		bs := byHost[t.Name]
		ss := services[ti]
		for i := range ss {
			s := &ss[i]
			if s.Incomplete() {
				continue
			}
			if !BeaconStands(findPtr(bs, i, func(r *beacon.Row) bool { return r.Service == s.Name })) {
				ok = false
				break
			}
		}
		stands[t.Name] = ok
	}
	return func(host string) bool { return stands[host] }
}

func (r *Runner) enforce(ctx context.Context, c *Cycle, f *fleet.Fleet, o Options) {
	// A service's hosts, for its share: the hosts declaring it, and for a
	// release row of a product no service declares, the hosts converging it.
	hosts := map[string]int{}
	declared := map[string]bool{}
	for _, t := range f.Doc.Targets {
		for _, s := range t.Services {
			hosts[s.Name]++
			declared[t.Name+"/"+s.Name] = true
		}
	}
	for _, r := range c.Rows {
		if r.Product != "" && !declared[r.Host+"/"+r.Service] {
			hosts[r.Service]++
		}
	}
	actor := r.Actor
	if actor == nil {
		actor = &FleetActor{Fleet: f, Connect: r.Connect, Reason: "autonomy cycle " + c.Start.Format(time.RFC3339), Settle: o.Settle, Wait: o.Wait, Now: r.Now}
	}
	c.Failed, c.Stopped = Enforce(ctx, c.Rows, *c.Caps, func(s string) int { return hosts[s] }, actor)
}
