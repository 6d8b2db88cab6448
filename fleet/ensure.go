package fleet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/units"
)

// EnsureOptions say what to ensure where.
type EnsureOptions struct {
	Name  string
	Hosts []string // the targets; or All
	All   bool     // every target that declares Name
	// AsLaunchAgent ensures a catalog product in user scope (a launchd
	// agent, a systemd --user unit).
	AsLaunchAgent bool
	Reason        string
	DryRun        bool
	Wait          time.Duration // bound on confirming the unit runs
	Settle        time.Duration // how long a fresh pid must hold
	// Env are values recorded in the declaration (over the product's
	// defaults on a first install, over the declaration's own env
	// otherwise) before the unit is rendered: ParseEnvAssignments reads
	// them from --env KEY=VALUE.
	Env map[string]string
}

// EnsureOutcome is one host's outcome of ensure.
type EnsureOutcome struct {
	Host string `json:"host"`
	OK   bool   `json:"ok"`
	// Install is installed, updated or unchanged (what the host did, or
	// would do under a dry run).
	Install string `json:"install,omitempty"`
	// Run is started, restarted or none.
	Run      string            `json:"run,omitempty"`
	Unit     string            `json:"unit,omitempty"`
	Path     string            `json:"path,omitempty"`
	Verdict  *units.Verdict    `json:"verdict,omitempty"`
	Logs     []string          `json:"logs,omitempty"` // the unit's last lines when it did not hold
	Recorded bool              `json:"recorded,omitempty"`
	Revision int64             `json:"registry_revision,omitempty"`
	Service  *registry.Service `json:"service,omitempty"`
	DryRun   bool              `json:"dry_run,omitempty"`
	Plan     []string          `json:"plan,omitempty"`
	Diff     string            `json:"diff,omitempty"`
	Error    *HostError        `json:"error,omitempty"`
	// Serving is the serving read of a service with a directory port on
	// the host, made before ensure reports success (fleet/serving.go).
	Serving *ServingResult `json:"serving,omitempty"`
	// SetAside are the host's drop-ins that repeated the declaration's
	// commands and held nothing else, renamed so systemd no longer applies
	// them (under a dry run: that would be).
	SetAside []channel.SetAsideDropIn `json:"set_aside,omitempty"`
}

// ensurePlan is what ensure will do on one host, decided from the registry
// and the catalog before any connection.
type ensurePlan struct {
	target  registry.Target
	service registry.Service
	// fromCatalog: the target declares nothing; the declaration comes from
	// the catalog product and is recorded once the host installed it.
	fromCatalog bool
	// envChanged: Env sets a value the declaration lacks, so the
	// declaration is rewritten before the host is asked.
	envChanged bool
	refused    error
}

// Ensure makes Name's declaration true on each host: one channel call per
// host renders, installs when the bytes differ, starts or restarts, and
// confirms on the host. A target without a declaration gets the catalog
// product's, recorded in the registry after its install. each (if not nil)
// gets every host's outcome as it completes, one at a time. The error is
// FanOutError's; a refusal decided before any host (an unknown target, no
// target declaring Name) is returned with no outcomes.
func (f *Fleet) Ensure(ctx context.Context, o EnsureOptions, each func(EnsureOutcome)) ([]EnsureOutcome, error) {
	if o.All == (len(o.Hosts) > 0) {
		return nil, &refusal.Error{Code: refusal.Usage, Message: "service ensure takes --host HOST (repeatable) or --all"}
	}
	var plans []ensurePlan
	if o.All {
		for _, t := range f.Doc.Targets {
			if s, ok := declaredAs(f.Catalog, t, o.Name); ok {
				plans = append(plans, planDeclared(f.Catalog, t, *s, o.Env))
			}
		}
		if len(plans) == 0 {
			// nobody declares it yet: a catalog product goes to every
			// target whose OS it supports
			if p, ok := catalog.OrShipped(f.Catalog).Lookup(o.Name); ok {
				for _, t := range f.Doc.Targets {
					if p.Supports(t.OS) {
						plans = append(plans, planEnsure(f.Catalog, t, o))
					}
				}
			}
		}
		if len(plans) == 0 {
			return nil, refusal.New(refusal.NotFound, "no target declares %s", o.Name)
		}
	} else {
		for _, h := range dedupe(o.Hosts) {
			t, err := f.Target(h)
			if err != nil {
				return nil, err
			}
			plans = append(plans, planEnsure(f.Catalog, t, o))
		}
	}
	reason := Reason(o.Reason, "service ensure %s", o.Name)
	if !o.DryRun {
		if _, err := f.recordEnv(ctx, plans, o.Env, reason+" (env "+strings.Join(envNames(o.Env), ", ")+")"); err != nil {
			return nil, err
		}
	}
	targets := make([]registry.Target, len(plans))
	byHost := map[string]ensurePlan{}
	for i, p := range plans {
		targets[i] = p.target
		byHost[p.target.Name] = p
	}
	return fanOut(ctx, f, "service ensure "+o.Name, targets, func(ctx context.Context, t registry.Target) (EnsureOutcome, error) {
		return f.ensureOne(ctx, byHost[t.Name], reason, o)
	}, func(r *EnsureOutcome, host string, err error) {
		r.Host, r.OK, r.Error, r.DryRun = host, err == nil, DescribeHostError(host, err), o.DryRun
	}, each)
}

// planDeclared is the plan of a target that declares the service: its
// declaration with env's values set, refused when incomplete or when it
// lacks a variable its catalog product requires.
func planDeclared(cat *catalog.Catalog, t registry.Target, s registry.Service, env map[string]string) ensurePlan {
	p := ensurePlan{target: t, service: withEnv(s, env), envChanged: envChanges(s, env)}
	if s.Incomplete() {
		p.refused = &units.IncompleteError{Service: s.Name, Unit: s.Unit, Reason: s.IncompleteReason}
	} else if err := requiredEnvRefusal(cat, t.Name, p.service); err != nil {
		p.refused = err
	}
	return p
}

// planEnsure finds what to ensure on t: its declaration (by name, unit, or
// the catalog product the name selects), else the catalog product's, with
// the product's required environment present. A product's name and each of
// its unit identities select the same product, so `stado.service` ensures
// the stado product (the host process, which ensure may restart but never
// stops). Only a name that selects nothing but a recovery list entry (such
// as stado-host) is refused with recovery_unit: that entry is kept by the
// host repair step, not by a declaration.
func planEnsure(cat *catalog.Catalog, t registry.Target, o EnsureOptions) ensurePlan {
	if s, ok := declaredAs(cat, t, o.Name); ok {
		return planDeclared(cat, t, *s, o.Env)
	}
	p := ensurePlan{target: t, fromCatalog: true}
	product, ok := cat.Lookup(o.Name)
	if rec, isRecovery := cat.RecoveryEntry(o.Name); !ok && isRecovery {
		p.refused = &refusal.Error{Code: refusal.RecoveryUnit,
			Message: fmt.Sprintf("%s is on the fixed recovery list, kept running by the host repair step, not by a declaration", rec.Name),
			Hint:    "stado service ensure stado --host " + t.Name + " installs the host process from its product"}
		return p
	}
	if !ok {
		p.refused = &refusal.Error{Code: refusal.NotFound, Message: fmt.Sprintf("%s is neither declared on %s nor a catalog product", o.Name, t.Name),
			Hint: "stado catalog show lists the products; stado service adopt UNIT records a unit the host already runs"}
		return p
	}
	if !product.Supports(t.OS) {
		p.refused = refusal.New(refusal.NotFound, "catalog product %s has no unit for %s, which %s runs", product.Name, t.OS, t.Name)
		return p
	}
	scope := registry.ScopeSystem
	if o.AsLaunchAgent {
		scope = registry.ScopeUser
	}
	p.service = withEnv(product.Declaration(t.OS, scope), o.Env)
	if missing := product.MissingEnv(p.service.Env); len(missing) > 0 {
		p.refused = &refusal.Error{Code: refusal.Validation, Message: fmt.Sprintf("catalog product %s needs %s, which no declaration on %s supplies", product.Name, strings.Join(missing, ", "), t.Name),
			Hint: fmt.Sprintf("stado service ensure %s --host %s --env %s=VALUE", o.Name, t.Name, missing[0])}
	}
	return p
}

var errAlreadyRecorded = errors.New("already recorded")

func (f *Fleet) ensureOne(ctx context.Context, p ensurePlan, reason string, o EnsureOptions) (EnsureOutcome, error) {
	s, t := p.service, p.target
	r := EnsureOutcome{Unit: s.Unit}
	if p.refused != nil {
		return r, &stagedError{host: t.Name, stage: StagePlan, err: p.refused}
	}
	h, err := f.host(t)
	if err != nil {
		return r, err
	}
	mode := channel.ModeApply
	if o.DryRun {
		mode = channel.ModePlan
	}
	req := channel.EnsureRequest{OS: t.OS, LaunchdDomain: t.LaunchdDomain, Service: s, Settle: o.Settle, Wait: o.Wait, Mode: mode}
	if port, ok := f.servingPort(t, s); ok && !o.DryRun {
		req.Serving = &port // the first serving read travels with the ensure
	}
	res, err := h.Ensure(ctx, req)
	if err != nil {
		return r, err
	}
	r.Install, r.Run, r.Path, r.Diff, r.SetAside = res.Install, res.Run, res.Path, res.Diff, res.SetAside
	v := res.Verdict
	r.Verdict = &v
	if o.DryRun {
		r.Plan = planLines(p, res)
		return r, nil
	}
	if p.fromCatalog && res.Install != "" {
		rec := s
		_, meta, err := registry.Update(ctx, f.Store, reason, func(d *registry.Document) error {
			dt, ok := d.Target(t.Name)
			if !ok {
				return refusal.New(refusal.NotFound, "target %s left the registry", t.Name)
			}
			if _, ok := dt.Service(rec.Name); ok {
				return errAlreadyRecorded
			}
			dt.Services = append(dt.Services, rec)
			return nil
		})
		switch {
		case errors.Is(err, errAlreadyRecorded):
		case err != nil:
			return r, &stagedError{host: t.Name, stage: StageRegistry, err: err}
		default:
			shown := rec.Masked(false)
			r.Recorded, r.Revision, r.Service = true, meta.Revision, &shown
		}
	}
	if !res.Confirmed {
		r.Logs = res.Logs
		return r, &FailingError{Host: t.Name, Verdict: res.Verdict}
	}
	return r, f.ensureServing(ctx, h, p, o, &r, res.Serving)
}

// planLines says in words what apply would do.
func planLines(p ensurePlan, res channel.EnsureResult) []string {
	s := p.service
	plan := []string{fmt.Sprintf("unit-install %s %s (%s)", s.Unit, res.Path, res.Install)}
	for _, d := range res.SetAside {
		plan = append(plan, setAsideWords(d)+" (the declaration holds it)")
	}
	if p.fromCatalog {
		plan = append(plan, fmt.Sprintf("record declaration %s on %s from catalog product %s", s.Name, p.target.Name, s.Product))
	}
	if p.envChanged {
		plan = append(plan, fmt.Sprintf("record env in the declaration of %s on %s", s.Name, p.target.Name))
	}
	switch res.Run {
	case channel.RunRestarted:
		plan = append(plan, "unit-restart "+s.Unit)
	case channel.RunStarted:
		plan = append(plan, "unit-start "+s.Unit)
	}
	if res.Run != channel.RunNone {
		plan = append(plan, "confirm "+s.Unit+" runs")
	}
	return plan
}
