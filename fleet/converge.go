package fleet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
)

// Sighting is a loaded unit a host's beacon shows and no declaration of
// that host covers (what `stado service list --undeclared` lists). fleet
// reads no beacons: converge's caller reads them (package convergence) and
// hands the sightings over.
type Sighting struct {
	Host  string `json:"host"`
	Unit  string `json:"unit"`
	State string `json:"state,omitempty"`
	PID   int    `json:"pid,omitempty"`
}

// Converge actions (ConvergeRow.Action).
const (
	ConvergeEnsure = "ensure" // the registry declares the service on the host
	ConvergeRetire = "retire" // the host runs a copy the registry no longer declares there
)

// Converge outcomes (ConvergeRow.Outcome).
const (
	OutcomePlanned = "planned" // --dry-run: the action would run
	OutcomeDone    = "done"    // the action ran and succeeded
	OutcomeSkipped = "skipped" // a cap or a rule left the action out; Error says which
	OutcomeRefused = "refused" // the host or the plan refused it; nothing changed
	OutcomeFailed  = "failed"
)

// ConvergeOptions say which service to converge and what its hosts were
// seen running.
type ConvergeOptions struct {
	Name string
	// Sightings are the undeclared loaded units of every host with a fresh
	// beacon; converge picks those of Name's unit.
	Sightings []Sighting
	// Unseen are the hosts whose beacon is missing or stale: what they run
	// is not known, so nothing is retired there.
	Unseen []string
	// Caps bound the blast radius (ResolveCaps of the registry's
	// autonomy section).
	Caps   Caps
	Reason string
	DryRun bool
	// Wait and Settle are ensure's (zero: its defaults).
	Wait, Settle time.Duration
}

// ConvergeRow is one host's action: what it is decided from, and what it
// did (or, under a dry run, would do).
type ConvergeRow struct {
	Host   string `json:"host"`
	Action string `json:"action"`
	Unit   string `json:"unit"`
	// Evidence is what the action is decided from: the declaration, or the
	// beacon's sighting of an undeclared copy.
	Evidence string `json:"evidence"`
	Outcome  string `json:"outcome"`
	OK       bool   `json:"ok"`
	// Ensure is an ensure row's outcome; Retire a retire row's (its
	// service is the declaration the copy was recognised by).
	Ensure *EnsureOutcome  `json:"ensure,omitempty"`
	Retire *WithdrawResult `json:"retire,omitempty"`
	// Error is why a row was skipped (capped, not_attempted, not_found,
	// recovery_unit), refused or failed.
	Error *HostError `json:"error,omitempty"`

	target   *registry.Target
	template registry.Service
}

// ConvergeResult is a converge's plan and, unless a dry run, its results.
type ConvergeResult struct {
	Service string `json:"service"`
	DryRun  bool   `json:"dry_run"`
	Caps    Caps   `json:"caps"`
	// Hosts is how many hosts the service is declared on or seen running
	// on: the caps' max_fraction is of this number.
	Hosts int `json:"hosts"`
	// RetiresPerRun is how many copies one converge retires at most.
	RetiresPerRun int            `json:"retires_per_run"`
	Rows          []ConvergeRow  `json:"results"`
	Unseen        []string       `json:"unseen,omitempty"`
	Stopped       string         `json:"stopped,omitempty"`
	Counts        map[string]int `json:"counts"`
}

// PlanConverge decides, from the registry, the catalog and the sightings
// alone, what converging name does on each host. The rules, in the order
// they apply:
//
//  1. Every target that declares name (by name, unit, or the catalog
//     product it selects) gets an ensure row, in registry order. No target
//     declaring it is refused (not_found): with nothing declared there is
//     no placement to converge to.
//  2. Every sighting of a unit name's declarations run (their unit, or a
//     unit identity of the catalog product they name) on a host that does
//     not declare name gets a retire row, in host order. One on a host that
//     is not a registry target is skipped (not_found: there is no channel
//     to reach it); one of a unit on the fixed recovery list is skipped
//     (recovery_unit: the host process is never retired).
//  3. Of the retire rows left, at most caps.PerService(n) are kept, n being
//     the hosts of rules 1 and 2; the rest are skipped (capped), and a later
//     converge retires them.
//
// It is a pure function; ConvergeRow.target and template carry what
// Converge needs to act.
func PlanConverge(doc *registry.Document, cat *catalog.Catalog, name string, sightings []Sighting, caps Caps) ([]ConvergeRow, int, error) {
	cat = catalog.OrShipped(cat)
	var rows []ConvergeRow
	declares := map[string]bool{}
	unitsOf := map[string]registry.Service{} // unit -> a declaration running it
	for i := range doc.Targets {
		t := &doc.Targets[i]
		s, ok := declaredAs(cat, *t, name)
		if !ok {
			continue
		}
		declares[t.Name] = true
		if _, seen := unitsOf[s.Unit]; !seen {
			unitsOf[s.Unit] = *s
		}
		if s.Product != "" {
			if p, ok := cat.Lookup(s.Product); ok {
				for _, u := range []string{p.Units.Systemd, p.Units.Launchd} {
					if _, seen := unitsOf[u]; u != "" && !seen {
						unitsOf[u] = *s
					}
				}
			}
		}
		rows = append(rows, ConvergeRow{Host: t.Name, Action: ConvergeEnsure, Unit: s.Unit, target: t, template: *s,
			Evidence: fmt.Sprintf("the registry declares %s on %s", s.Name, t.Name)})
	}
	if len(rows) == 0 {
		return nil, 0, &refusal.Error{Code: refusal.NotFound, Message: fmt.Sprintf("%s is not a registry-managed service on any target: there is no placement to converge to", name),
			Hint: "stado service retire NAME --host HOST retires a declared copy; stado service list --undeclared shows what runs undeclared"}
	}
	hosts := map[string]bool{}
	for _, r := range rows {
		hosts[r.Host] = true
	}
	sorted := slices.Clone(sightings)
	slices.SortStableFunc(sorted, func(a, b Sighting) int { return cmp.Or(cmp.Compare(a.Host, b.Host), cmp.Compare(a.Unit, b.Unit)) })
	var retires []int
	for _, sg := range sorted {
		tmpl, ours := unitsOf[sg.Unit]
		if !ours || declares[sg.Host] {
			continue
		}
		hosts[sg.Host] = true
		r := ConvergeRow{Host: sg.Host, Action: ConvergeRetire, Unit: sg.Unit, template: tmpl,
			Evidence: fmt.Sprintf("the beacon of %s shows %s %s%s with no declaration there", sg.Host, sg.Unit, cmp.Or(sg.State, "loaded"), pidWords(sg.PID))}
		t, ok := doc.Target(sg.Host)
		switch {
		case !ok:
			r.skip(refusal.NotFound, fmt.Sprintf("%s is not a registry target, so no channel reaches it", sg.Host))
		default:
			r.target = t
			if _, rec := cat.RecoveryEntry(sg.Unit); rec {
				r.skip(refusal.RecoveryUnit, fmt.Sprintf("%s is on the fixed recovery list: the host process is never retired", sg.Unit))
				break
			}
			retires = append(retires, len(rows))
		}
		rows = append(rows, r)
	}
	n := len(hosts)
	perRun := caps.PerService(n)
	for k, i := range retires {
		if k >= perRun {
			rows[i].skip(refusal.Capped, fmt.Sprintf("retiring more than %d of the %d hosts of %s in one converge exceeds max_fraction %g; converge again once this one ends", perRun, n, name, caps.MaxFraction))
		}
	}
	return rows, n, nil
}

func pidWords(pid int) string {
	if pid > 0 {
		return fmt.Sprintf(" (pid %d)", pid)
	}
	return ""
}

func (r *ConvergeRow) skip(code refusal.Code, why string) {
	r.Outcome = OutcomeSkipped
	r.Error = &HostError{Host: r.Host, Stage: StagePlan, Code: string(code), Refused: true, Message: fmt.Sprintf("%s: %s %s skipped: %s", r.Host, r.Action, r.Unit, why)}
}

// Converge reconciles name's placement with what its hosts run: it ensures
// the service on every target that declares it, then retires the undeclared
// copies the sightings show elsewhere (draining a product with a drain step
// first, as retire does), as PlanConverge decides. It acts on at most
// min(caps.MaxConcurrent, caps.PerService(n)) hosts at once; once
// caps.FailureBudget actions failed, the rest are skipped (not_attempted);
// and it retires nothing unless every ensure succeeded, so no copy goes
// before the declared ones stand. It writes no declaration (the registry is
// the placement). Under DryRun the ensures run in the host's plan mode and
// the retires are only planned: nothing changes.
//
// The error is a refusal decided before any host (not_found, or the
// recovery list), else FanOutError of the rows that did not succeed
// (capped rows count only outside a dry run). The result is whole either
// way; it is safe to call while nothing else uses f.
func (f *Fleet) Converge(ctx context.Context, o ConvergeOptions) (ConvergeResult, error) {
	res := ConvergeResult{Service: o.Name, DryRun: o.DryRun, Caps: o.Caps, Unseen: o.Unseen}
	rows, n, err := PlanConverge(f.Doc, f.Catalog, o.Name, o.Sightings, o.Caps)
	if err != nil {
		return res, err
	}
	res.Hosts, res.RetiresPerRun = n, o.Caps.PerService(n)
	conc := max(1, min(o.Caps.MaxConcurrent, o.Caps.PerService(n)))
	var (
		mu     sync.Mutex
		failed int
	)
	budgetLeft := func() bool {
		mu.Lock()
		defer mu.Unlock()
		if res.Stopped == "" && o.Caps.FailureBudget > 0 && failed >= o.Caps.FailureBudget {
			res.Stopped = fmt.Sprintf("the failure budget of %d was reached", o.Caps.FailureBudget)
		}
		if res.Stopped == "" && ctx.Err() != nil {
			res.Stopped = "the converge was cancelled: " + context.Cause(ctx).Error()
		}
		return res.Stopped == ""
	}
	phase := func(action string) {
		sem := make(chan struct{}, conc)
		var wg sync.WaitGroup
		for i := range rows {
			r := &rows[i]
			if r.Action != action || r.Outcome != "" {
				continue
			}
			sem <- struct{}{}
			if !budgetLeft() {
				<-sem
				r.skip(refusal.NotAttempted, res.Stopped)
				continue
			}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				f.act(ctx, r, o)
				if r.Outcome == OutcomeRefused || r.Outcome == OutcomeFailed {
					mu.Lock()
					failed++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
	}
	phase(ConvergeEnsure)
	ensuresStand := true
	for _, r := range rows {
		if r.Action == ConvergeEnsure && !r.OK {
			ensuresStand = false
		}
	}
	if !ensuresStand {
		for i := range rows {
			if r := &rows[i]; r.Action == ConvergeRetire && r.Outcome == "" {
				r.skip(refusal.NotAttempted, "an ensure did not succeed, so the declared copies may not stand and no copy is retired")
			}
		}
	}
	phase(ConvergeRetire)
	res.Rows, res.Counts = rows, map[string]int{}
	errs, order := map[string]error{}, []string{}
	for _, r := range rows {
		res.Counts[r.Outcome]++
		key := r.Host + " " + r.Action + " " + r.Unit
		order = append(order, key)
		if r.Error != nil && !(o.DryRun && r.Error.Code == string(refusal.Capped)) {
			errs[key] = rowError(r.Error)
		}
	}
	return res, FanOutError("service converge "+o.Name, errs, order)
}

// rowError is a row's HostError as an error: a refusal keeps its code.
func rowError(he *HostError) error {
	if he.Refused {
		return &refusal.Error{Code: refusal.Code(he.Code), Message: he.Message}
	}
	return errors.New(he.Message)
}

// act runs one row and sets its outcome.
func (f *Fleet) act(ctx context.Context, r *ConvergeRow, o ConvergeOptions) {
	g := *f
	g.Parallel = 1
	var err error
	switch r.Action {
	case ConvergeEnsure:
		var outs []EnsureOutcome
		outs, err = g.Ensure(ctx, EnsureOptions{Name: o.Name, Hosts: []string{r.Host}, Reason: Reason(o.Reason, "service converge %s", o.Name),
			DryRun: o.DryRun, Wait: o.Wait, Settle: o.Settle}, nil)
		if len(outs) == 1 {
			r.Ensure = &outs[0]
		}
	default:
		var wr WithdrawResult
		wr, err = g.retireCopy(ctx, *r.target, r.template, r.Unit, o.DryRun)
		r.Retire = &wr
	}
	r.OK = err == nil
	switch {
	case err == nil && o.DryRun:
		r.Outcome = OutcomePlanned
	case err == nil:
		r.Outcome = OutcomeDone
	default:
		r.Error = DescribeHostError(r.Host, err)
		r.Outcome = r.Error.Outcome()
		if r.Retire != nil {
			r.Retire.Error = r.Error
		}
	}
}

// retireCopy stops and removes unit on t, a copy of the service tmpl
// declares elsewhere, draining it first as Retire does. No declaration is
// withdrawn: t has none.
func (f *Fleet) retireCopy(ctx context.Context, t registry.Target, tmpl registry.Service, unit string, dryRun bool) (WithdrawResult, error) {
	s := tmpl
	s.Unit = unit
	if unit != tmpl.Unit {
		s.UnitPath = "" // the product's identity on another OS: its own default place
	}
	res := WithdrawResult{Host: t.Name, Service: s.Masked(false), DryRun: dryRun}
	where := cmp.Or(s.UnitPath, "its "+s.EffectiveScope()+" unit directory")
	drain := planDrain(f.Catalog, s, WithdrawOptions{DryRun: dryRun}, &res)
	res.Plan = append(res.Plan, "unit-remove "+unit+" from "+where+" (stops and unloads it; "+t.Name+" declares no "+tmpl.Name+")")
	if dryRun {
		res.Path = s.UnitPath
		return res, nil
	}
	h, err := f.host(t)
	if err != nil {
		return res, err
	}
	if drain != nil {
		if err := runDrain(ctx, h, t.Name, drain); err != nil {
			return res, err
		}
	}
	rm, err := h.UnitRemove(ctx, channel.RemoveRequest{UnitRef: channel.UnitRef{Scope: s.EffectiveScope(), Unit: unit}, Path: s.UnitPath})
	if err != nil {
		return res, err
	}
	res.Path, res.UnitFound = rm.Path, rm.Removed
	return res, nil
}

// Lines says the converge host by host: one line per row, and the plan
// of a dry run.
func (r ConvergeResult) Lines() []string {
	var out []string
	verb := "converged"
	if r.DryRun {
		verb = "would converge"
	}
	out = append(out, fmt.Sprintf("%s %s: %d host(s), caps max-concurrent %d, max-fraction %g (at most %d retire(s) per run), failure-budget %d",
		verb, r.Service, r.Hosts, r.Caps.MaxConcurrent, r.Caps.MaxFraction, r.RetiresPerRun, r.Caps.FailureBudget))
	for _, row := range r.Rows {
		out = append(out, row.Lines(r.DryRun)...)
	}
	for _, h := range r.Unseen {
		out = append(out, fmt.Sprintf("%s: not read: no fresh beacon, so what it runs is not known and nothing is retired there", h))
	}
	if r.Stopped != "" {
		out = append(out, "stopped: "+r.Stopped)
	}
	return out
}

// Lines of one converge row.
func (r ConvergeRow) Lines(dryRun bool) []string {
	head := fmt.Sprintf("%s: %s %s", r.Host, r.Action, r.Unit)
	if r.Error != nil {
		return []string{fmt.Sprintf("%s: %s (%s): %s", head, r.Outcome, r.Error.Code, strings.TrimPrefix(r.Error.Message, r.Host+": "))}
	}
	switch {
	case r.Ensure != nil && dryRun:
		return []string{fmt.Sprintf("%s: would %s", head, strings.Join(r.Ensure.Plan, ", then "))}
	case r.Ensure != nil:
		line := fmt.Sprintf("%s: %s", head, r.Ensure.Install)
		if r.Ensure.Run != "" {
			line += ", " + r.Ensure.Run
		}
		if v := r.Ensure.Verdict; v != nil {
			line += fmt.Sprintf(", %s pid %d", v.State, v.PID)
		}
		return []string{line}
	case r.Retire != nil && dryRun:
		return []string{fmt.Sprintf("%s: would %s (%s)", head, strings.Join(r.Retire.Plan, ", then "), r.Evidence)}
	case r.Retire != nil:
		out := []string{fmt.Sprintf("%s: retired (%s removed)", head, cmp.Or(r.Retire.Path, "its unit"))}
		return append(out, indent(r.Retire.Drain.Lines())...)
	}
	return []string{head + ": " + r.Outcome}
}

func indent(ls []string) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = "  " + l
	}
	return out
}
