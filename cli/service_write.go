package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/units"
)

// serviceWriteCommands are the service commands that act on hosts over the
// host channel and change declarations through registry.Update, plus show,
// which reads the declaration and catalog entry without SSH.
func serviceWriteCommands(env *Env) []*ucli.Command {
	return []*ucli.Command{
		newServiceShowCommand(env),
		newServiceEnsureCommand(env),
		newServiceAdoptCommand(env),
		newServiceRetireCommand(env),
		newServiceRemoveCommand(env),
		newServiceRestartCommand(env),
		newServiceLogsCommand(env),
		newServiceEnvCommand(env),
		newServiceUnitCommand(env),
	}
}

func reasonFlag() ucli.Flag {
	return &ucli.StringFlag{Name: "reason", Usage: "why: recorded with the registry revision this produces"}
}

func dryRunFlag() ucli.Flag {
	return &ucli.BoolFlag{Name: "dry-run", Usage: "print the plan (and the unit diff) and change nothing"}
}

func hostFlag(usage string) ucli.Flag { return &ucli.StringFlag{Name: "host", Usage: usage} }

func hostsFlag(usage string) ucli.Flag { return &ucli.StringSliceFlag{Name: "host", Usage: usage} }

func linesFlag() ucli.Flag {
	return &ucli.IntFlag{Name: "lines", Value: 100, Usage: "log lines to read (1 to 10000)"}
}

// loadRegistry reads the registry; an empty store is an empty document.
func loadRegistry(ctx context.Context, st registry.Store) (*registry.Document, registry.Meta, error) {
	doc, meta, err := registry.Load(ctx, st)
	if errors.Is(err, registry.ErrNotFound) {
		return &registry.Document{Version: 1}, registry.Meta{}, nil
	}
	return doc, meta, err
}

// writeContext opens the store and reads the registry and the catalog.
type writeContext struct {
	store registry.Store
	doc   *registry.Document
	meta  registry.Meta
	cat   *catalog.Catalog
}

func openWriteContext(ctx context.Context, env *Env) (*writeContext, error) {
	st, err := openStore(ctx, env)
	if err != nil {
		return nil, err
	}
	doc, meta, err := loadRegistry(ctx, st)
	if err != nil {
		st.Close()
		return nil, err
	}
	cat, err := catalog.Load(ctx, st)
	if err != nil {
		st.Close()
		return nil, err
	}
	return &writeContext{store: st, doc: doc, meta: meta, cat: cat}, nil
}

func (w *writeContext) Close() { w.store.Close() }

// target returns the registry target named host, or a not_found refusal.
func (w *writeContext) target(host string) (registry.Target, error) {
	if host == "" {
		return registry.Target{}, usagef("--host HOST is required")
	}
	t, ok := w.doc.Target(host)
	if !ok {
		return registry.Target{}, refuse("not_found", "no target %q in the registry", host)
	}
	return *t, nil
}

// notManaged is the refusal for a name no declaration on host covers.
func notManaged(name, host string) *Refusal {
	return &Refusal{Code: "not_found", Message: fmt.Sprintf("%s is not a registry-managed service on %s", name, host),
		Hint: fmt.Sprintf("stado service unit show %s --host %s reads a loaded unit without a declaration", name, host)}
}

// declared returns host's declaration addressed by name or unit.
func (w *writeContext) declared(host, name string) (registry.Target, registry.Service, error) {
	t, err := w.target(host)
	if err != nil {
		return t, registry.Service{}, err
	}
	s, ok := t.Service(name)
	if !ok {
		return t, registry.Service{}, notManaged(name, host)
	}
	return t, *s, nil
}

func defaultReason(reason, format string, args ...any) string {
	if strings.TrimSpace(reason) != "" {
		return reason
	}
	return fmt.Sprintf(format, args...)
}

// maskEnv replaces every value with a fixed mask unless show is set.
func maskEnv(env map[string]string, show bool) map[string]string {
	if env == nil {
		return nil
	}
	out := make(map[string]string, len(env))
	for k, v := range env {
		if show {
			out[k] = v
		} else {
			out[k] = maskedValue
		}
	}
	return out
}

const maskedValue = "********"

// ---------------------------------------------------------------- show

type serviceShowOptions struct {
	Name       string
	ShowValues bool
}

func newServiceShowCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "show",
		Usage: "show a service's declarations and its catalog entry (no SSH)",
		UsageText: "stado service show NAME [--show-values] [--json]\n\n" +
			"NAME is a declaration's name or unit, or a catalog product. Environment values are masked\n" +
			"unless --show-values is given.\n\n" +
			"example:\n   stado service show brama --json",
		Flags: []ucli.Flag{&ucli.BoolFlag{Name: "show-values", Usage: "print environment values instead of a mask"}},
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return usagef("service show takes one NAME")
			}
			return runServiceShow(c.Context, env, serviceShowOptions{Name: c.Args().First(), ShowValues: c.Bool("show-values")})
		},
	}, true)
}

// shownDeclaration is one host's declaration in service show.
type shownDeclaration struct {
	Host       string           `json:"host"`
	Service    registry.Service `json:"service"`
	Incomplete bool             `json:"incomplete"`
}

func runServiceShow(ctx context.Context, env *Env, o serviceShowOptions) error {
	w, err := openWriteContext(ctx, env)
	if err != nil {
		return err
	}
	defer w.Close()
	var decls []shownDeclaration
	for _, t := range w.doc.Targets {
		if s, ok := t.Service(o.Name); ok {
			d := *s
			d.Env = maskEnv(d.Env, o.ShowValues)
			decls = append(decls, shownDeclaration{Host: t.Name, Service: d, Incomplete: s.Incomplete()})
		}
	}
	product, inCatalog := w.cat.Lookup(o.Name)
	if !inCatalog {
		product, inCatalog = w.cat.RecoveryEntry(o.Name)
	}
	if len(decls) == 0 && !inCatalog {
		return refuse("not_found", "%s is neither declared on any target nor a catalog product", o.Name)
	}
	if env.JSON {
		if decls == nil {
			decls = []shownDeclaration{}
		}
		doc := map[string]any{"kind": "stado.service.show", "name": o.Name, "registry_revision": w.meta.Revision, "declarations": decls}
		if inCatalog {
			doc["catalog"] = product
		}
		return printJSON(env, doc)
	}
	out := env.Stdout
	if len(decls) == 0 {
		fmt.Fprintf(out, "%s: declared on no target\n", o.Name)
	}
	for _, d := range decls {
		s := d.Service
		fmt.Fprintf(out, "%s on %s: unit %s, scope %s\n", s.Name, d.Host, s.Unit, s.EffectiveScope())
		if s.UnitPath != "" {
			fmt.Fprintf(out, "  unit_path: %s\n", s.UnitPath)
		}
		if d.Incomplete {
			fmt.Fprintf(out, "  declaration_incomplete: no program, so it cannot be reinstalled")
			if s.IncompleteReason != "" {
				fmt.Fprintf(out, " (%s)", s.IncompleteReason)
			}
			fmt.Fprintln(out)
		} else {
			fmt.Fprintf(out, "  program: %s\n", s.Program)
			if len(s.Args) > 0 {
				fmt.Fprintf(out, "  args: %s\n", strings.Join(quoteWords(s.Args), " "))
			}
		}
		for _, k := range sortedEnvKeys(s.Env) {
			fmt.Fprintf(out, "  env %s=%s\n", k, s.Env[k])
		}
		if s.Product != "" {
			fmt.Fprintf(out, "  product: %s\n", s.Product)
		}
	}
	if inCatalog {
		fmt.Fprintf(out, "catalog %s (%s, %s): systemd %s, launchd %s, program %s\n", product.Name, product.Source, product.Origin,
			orDash(product.Units.Systemd), orDash(product.Units.Launchd), orDash(product.Program))
		if product.Answering != nil {
			fmt.Fprintf(out, "  answering: %s %s, repair %v\n", product.Answering.Method, product.Answering.Path, product.Answering.Repair)
		}
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func quoteWords(ws []string) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		if w == "" || strings.ContainsAny(w, " \t'\"\\$") {
			out[i] = fmt.Sprintf("%q", w)
		} else {
			out[i] = w
		}
	}
	return out
}

// ---------------------------------------------------------------- ensure

type serviceEnsureOptions struct {
	Name          string
	Hosts         []string
	All           bool
	AsLaunchAgent bool
	Reason        string
	DryRun        bool
	Parallel      int
	Wait          time.Duration // bound on confirming the unit runs
	Settle        time.Duration // how long a fresh pid must hold
	Dialer        *channel.Dialer
}

func newServiceEnsureCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "ensure",
		Usage: "install a declared service's unit where it changed, start or restart it, and confirm it runs",
		UsageText: "stado service ensure NAME (--host HOST... | --all) [--as-launch-agent] [--reason TEXT] [--dry-run] [--parallel N] [--json]\n\n" +
			"Renders the unit from the host's declaration, or from the catalog product NAME when the host\n" +
			"declares none (recording that declaration in the registry). A unit whose bytes are unchanged\n" +
			"and that runs is left alone. One result line per host as it completes.\n\n" +
			"example:\n   stado service ensure brama --host host2 --reason \"new gateway host\"",
		Flags: append([]ucli.Flag{
			hostsFlag("target to ensure it on (repeatable)"),
			&ucli.BoolFlag{Name: "all", Usage: "every target that declares NAME"},
			&ucli.BoolFlag{Name: "as-launch-agent", Usage: "a catalog product as a per-user unit (launchd agent, systemd --user)"},
			reasonFlag(), dryRunFlag(), parallelFlag(),
			&ucli.DurationFlag{Name: "wait", Value: 30 * time.Second, Usage: "bound on confirming the unit runs"},
			&ucli.DurationFlag{Name: "settle", Value: time.Second, Usage: "how long a newly started process must keep its pid to count as running"},
		}, sshFlags()...),
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return usagef("service ensure takes one NAME")
			}
			return runServiceEnsure(c.Context, env, serviceEnsureOptions{
				Name: c.Args().First(), Hosts: c.StringSlice("host"), All: c.Bool("all"), AsLaunchAgent: c.Bool("as-launch-agent"),
				Reason: c.String("reason"), DryRun: c.Bool("dry-run"), Parallel: c.Int("parallel"),
				Wait: c.Duration("wait"), Settle: c.Duration("settle"), Dialer: dialerFrom(c),
			})
		},
	}, true)
}

// EnsureResult is one host's outcome of ensure.
type EnsureResult struct {
	Host string `json:"host"`
	OK   bool   `json:"ok"`
	// Install is installed, updated or unchanged (what unit-install did, or
	// would do under --dry-run).
	Install string `json:"install,omitempty"`
	// Run is started, restarted or none.
	Run      string            `json:"run,omitempty"`
	Unit     string            `json:"unit,omitempty"`
	Path     string            `json:"path,omitempty"`
	Verdict  *units.Verdict    `json:"verdict,omitempty"`
	Logs     []string          `json:"logs,omitempty"` // the unit's last lines when it is failing
	Recorded bool              `json:"recorded,omitempty"`
	Revision int64             `json:"registry_revision,omitempty"`
	Service  *registry.Service `json:"service,omitempty"`
	DryRun   bool              `json:"dry_run,omitempty"`
	Plan     []string          `json:"plan,omitempty"`
	Diff     string            `json:"diff,omitempty"`
	Error    *HostError        `json:"error,omitempty"`
}

// ensurePlan is what ensure will do on one host, decided from the
// registry and the catalog before any connection.
type ensurePlan struct {
	target  registry.Target
	service registry.Service
	// fromCatalog: the target declares nothing; the declaration comes from
	// the catalog product and is recorded when the unit is installed.
	fromCatalog bool
	refused     error
}

func runServiceEnsure(ctx context.Context, env *Env, o serviceEnsureOptions) error {
	if o.All == (len(o.Hosts) > 0) {
		return usagef("service ensure takes --host HOST (repeatable) or --all")
	}
	w, err := openWriteContext(ctx, env)
	if err != nil {
		return err
	}
	defer w.Close()
	var plans []ensurePlan
	if o.All {
		for _, t := range w.doc.Targets {
			if s, ok := t.Service(o.Name); ok {
				plans = append(plans, planDeclared(t, *s))
			}
		}
		if len(plans) == 0 {
			return refuse("not_found", "no target declares %s", o.Name)
		}
	} else {
		seen := map[string]bool{}
		for _, h := range o.Hosts {
			if seen[h] {
				continue
			}
			seen[h] = true
			t, err := w.target(h)
			if err != nil {
				return err
			}
			plans = append(plans, planEnsure(w.cat, t, o))
		}
	}
	reason := defaultReason(o.Reason, "service ensure %s", o.Name)
	pool := channel.NewPool(o.Dialer)
	defer pool.Close()
	targets := make([]registry.Target, len(plans))
	byHost := map[string]ensurePlan{}
	for i, p := range plans {
		targets[i] = p.target
		byHost[p.target.Name] = p
	}
	results := map[string]EnsureResult{}
	errs := map[string]error{}
	order := make([]string, len(targets))
	for i, t := range targets {
		order[i] = t.Name
	}
	channel.FanOut(ctx, targets, o.Parallel, func(ctx context.Context, t registry.Target) channel.Result {
		r, err := ensureOne(ctx, w.store, hostSession{pool: pool, target: t}, byHost[t.Name], reason, o)
		return channel.Result{Value: r, Err: err}
	}, func(res channel.Result) {
		r, _ := res.Value.(EnsureResult) // zero when cancelled before it started
		r.Host = res.Host
		r.OK = res.Err == nil
		r.Error = describeHostError(res.Host, res.Err)
		results[res.Host], errs[res.Host] = r, res.Err
		if !env.JSON {
			printEnsureLine(env, r, res.Err)
		}
	})
	if env.JSON {
		list := make([]EnsureResult, len(order))
		for i, h := range order {
			list[i] = results[h]
		}
		if err := printJSON(env, map[string]any{"kind": "stado.service.ensure", "service": o.Name, "dry_run": o.DryRun, "results": list}); err != nil {
			return err
		}
	}
	return fanOutError("service ensure "+o.Name, errs, order)
}

// planDeclared is the plan of a target that declares the service.
func planDeclared(t registry.Target, s registry.Service) ensurePlan {
	p := ensurePlan{target: t, service: s}
	if s.Incomplete() {
		p.refused = &units.IncompleteError{Service: s.Name, Unit: s.Unit, Reason: s.IncompleteReason}
	}
	return p
}

// planEnsure finds what to ensure on t: its declaration, else the catalog
// product's, with the product's required environment present.
func planEnsure(cat *catalog.Catalog, t registry.Target, o serviceEnsureOptions) ensurePlan {
	if s, ok := t.Service(o.Name); ok {
		return planDeclared(t, *s)
	}
	p := ensurePlan{target: t, fromCatalog: true}
	if _, ok := cat.RecoveryEntry(o.Name); ok {
		p.refused = refuse("recovery_unit", "%s is on the fixed recovery list, managed by the host repair step, not by a declaration", o.Name)
		return p
	}
	product, ok := cat.Lookup(o.Name)
	if !ok {
		p.refused = &Refusal{Code: "not_found", Message: fmt.Sprintf("%s is neither declared on %s nor a catalog product", o.Name, t.Name),
			Hint: "stado catalog show lists the products; stado service adopt UNIT records a unit the host already runs"}
		return p
	}
	if !product.Supports(t.OS) {
		p.refused = refuse("not_found", "catalog product %s has no unit for %s, which %s runs", product.Name, t.OS, t.Name)
		return p
	}
	scope := registry.ScopeSystem
	if o.AsLaunchAgent {
		scope = registry.ScopeUser
	}
	p.service = product.Declaration(t.OS, scope)
	if missing := product.MissingEnv(p.service.Env); len(missing) > 0 {
		p.refused = &Refusal{Code: "validation", Message: fmt.Sprintf("catalog product %s needs %s, which no declaration on %s supplies", product.Name, strings.Join(missing, ", "), t.Name),
			Hint: "declare the service with its env in the registry (stado registry push), then ensure it"}
	}
	return p
}

func ensureOne(ctx context.Context, st registry.Store, hs hostSession, p ensurePlan, reason string, o serviceEnsureOptions) (EnsureResult, error) {
	s := p.service
	r := EnsureResult{Unit: s.Unit, DryRun: o.DryRun}
	if p.refused != nil {
		return r, &stagedError{host: hs.target.Name, stage: stagePlan, err: p.refused}
	}
	v, err := hs.version(ctx)
	if err != nil {
		return r, err
	}
	content, err := units.Render(s, hs.target.OS, v.Home)
	if err != nil {
		return r, &stagedError{host: hs.target.Name, stage: stagePlan, err: err}
	}
	scope := s.EffectiveScope()
	r.Path = units.UnitPath(s, hs.target.OS, v.Home)
	if o.DryRun {
		return ensureDryRun(ctx, hs, p, r, content)
	}
	var inst units.InstallResult
	if err := hs.call(ctx, channel.Command{Verb: channel.VerbUnitInstall, Scope: scope, Units: []string{s.Unit}, Path: r.Path}, content, &inst); err != nil {
		return r, err
	}
	r.Install = inst.Action
	if p.fromCatalog {
		rec := s
		_, meta, err := registry.Update(ctx, st, reason, func(d *registry.Document) error {
			t, ok := d.Target(hs.target.Name)
			if !ok {
				return refuse("not_found", "target %s left the registry", hs.target.Name)
			}
			if _, ok := t.Service(rec.Name); ok {
				return errAlreadyRecorded
			}
			t.Services = append(t.Services, rec)
			return nil
		})
		switch {
		case errors.Is(err, errAlreadyRecorded):
		case err != nil:
			return r, &stagedError{host: hs.target.Name, stage: stageRegistry, err: err}
		default:
			r.Recorded, r.Revision, r.Service = true, meta.Revision, &rec
		}
	}
	before, _, err := hs.show(ctx, scope, s.Unit)
	if err != nil {
		return r, err
	}
	running := before.State == units.StateActive && before.PID > 0
	switch {
	case inst.Action == units.ActionUnchanged && running:
		r.Run, r.Verdict = "none", &before
		return r, nil
	case before.State == units.StateActive:
		r.Run = "restarted"
		_, err = hs.control(ctx, channel.VerbUnitRestart, scope, s.Unit)
	default:
		r.Run = "started"
		_, err = hs.control(ctx, channel.VerbUnitStart, scope, s.Unit)
	}
	if err != nil {
		return r, err
	}
	after, err := confirmRunning(ctx, hs, scope, s.Unit, o.Wait, o.Settle)
	r.Verdict = &after
	var fe *failingError
	if errors.As(err, &fe) {
		var logs logsResult
		if hs.call(ctx, channel.Command{Verb: channel.VerbUnitLogs, Scope: scope, Units: []string{s.Unit}, Lines: 10}, nil, &logs) == nil {
			r.Logs = logs.Lines
		}
	}
	return r, err
}

var errAlreadyRecorded = errors.New("already recorded")

// confirmRunning polls the unit until it is active with a pid that holds
// for settle, or it is failing, failed or inactive, or wait runs out.
func confirmRunning(ctx context.Context, hs hostSession, scope, unit string, wait, settle time.Duration) (units.Verdict, error) {
	if wait <= 0 {
		wait = 30 * time.Second
	}
	deadline := time.Now().Add(wait)
	var pid int
	var since time.Time
	for {
		v, _, err := hs.show(ctx, scope, unit)
		if err != nil {
			return v, err
		}
		now := time.Now()
		switch {
		case v.State == units.StateActive && v.PID > 0:
			if v.PID != pid {
				pid, since = v.PID, now
			}
			if now.Sub(since) >= settle {
				return v, nil
			}
		case v.State == units.StateFailing, v.State == units.StateFailed, v.State == units.StateMissing:
			return v, &failingError{host: hs.target.Name, verdict: v}
		case v.State == units.StateInactive && v.Starts > 0:
			return v, &failingError{host: hs.target.Name, verdict: v}
		default:
			pid = 0
		}
		if now.After(deadline) {
			return v, &failingError{host: hs.target.Name, verdict: v}
		}
		if err := sleepCtx(ctx, pollInterval); err != nil {
			return v, &channel.RemoteError{Host: hs.target.Name, Stage: channel.StageRemoteExit, Err: err}
		}
	}
}

// ensureDryRun reads what the host has and says what ensure would do.
func ensureDryRun(ctx context.Context, hs hostSession, p ensurePlan, r EnsureResult, content []byte) (EnsureResult, error) {
	s := p.service
	v, file, err := hs.show(ctx, s.EffectiveScope(), s.Unit)
	if err != nil {
		return r, err
	}
	r.Verdict = &v
	old := ""
	if file != nil && file.Path == r.Path {
		old = file.Content
	}
	switch {
	case file == nil || file.Path != r.Path:
		r.Install = units.ActionInstalled
	case old == string(content):
		r.Install = units.ActionUnchanged
	default:
		r.Install = units.ActionUpdated
	}
	r.Diff = unitDiff(r.Path, old, string(content))
	running := v.State == units.StateActive && v.PID > 0
	switch {
	case r.Install == units.ActionUnchanged && running:
		r.Run = "none"
	case v.State == units.StateActive:
		r.Run = "restarted"
	default:
		r.Run = "started"
	}
	r.Plan = append(r.Plan, fmt.Sprintf("unit-install %s %s (%s)", s.Unit, r.Path, r.Install))
	if p.fromCatalog {
		r.Plan = append(r.Plan, fmt.Sprintf("record declaration %s on %s from catalog product %s", s.Name, hs.target.Name, s.Product))
	}
	switch r.Run {
	case "restarted":
		r.Plan = append(r.Plan, "unit-restart "+s.Unit)
	case "started":
		r.Plan = append(r.Plan, "unit-start "+s.Unit)
	}
	if r.Run != "none" {
		r.Plan = append(r.Plan, "confirm "+s.Unit+" runs")
	}
	return r, nil
}

func printEnsureLine(env *Env, r EnsureResult, err error) {
	out := env.Stdout
	if err != nil {
		fmt.Fprintf(out, "%s: failed: %s\n", r.Host, strings.TrimPrefix(hostPrefixed(r.Host, err), r.Host+": "))
		for _, l := range r.Logs {
			fmt.Fprintf(out, "  %s\n", l)
		}
		return
	}
	if r.DryRun {
		fmt.Fprintf(out, "%s: would %s\n", r.Host, strings.Join(r.Plan, ", then "))
		if r.Diff != "" {
			fmt.Fprint(out, r.Diff)
		}
		return
	}
	line := fmt.Sprintf("%s: %s %s (%s)", r.Host, r.Unit, r.Install, r.Path)
	if r.Run != "none" {
		line += ", " + r.Run
	}
	if v := r.Verdict; v != nil {
		line += fmt.Sprintf(", %s pid %d", v.State, v.PID)
	}
	if r.Recorded {
		line += fmt.Sprintf(", declaration recorded at registry revision %d", r.Revision)
	}
	fmt.Fprintln(out, line)
}

// unitDiff is a line diff of a unit file, old to new, in unified style
// without hunks (units are short); "" when they are equal.
func unitDiff(path, old, new string) string {
	if old == new {
		return ""
	}
	a, b := splitKeep(old), splitKeep(new)
	// longest common subsequence table
	n, m := len(a), len(b)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var sb strings.Builder
	from := path
	if old == "" {
		from = "/dev/null"
	}
	fmt.Fprintf(&sb, "--- %s\n+++ %s\n", from, path)
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			sb.WriteString(" " + a[i] + "\n")
			i, j = i+1, j+1
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			sb.WriteString("-" + a[i] + "\n")
			i++
		default:
			sb.WriteString("+" + b[j] + "\n")
			j++
		}
	}
	return sb.String()
}

func splitKeep(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// ---------------------------------------------------------------- adopt

type serviceAdoptOptions struct {
	Unit   string
	Host   string
	Name   string
	User   bool
	Reason string
	DryRun bool
	Dialer *channel.Dialer
}

func newServiceAdoptCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "adopt",
		Usage: "record a unit a host already runs as a declaration, from its unit file",
		UsageText: "stado service adopt UNIT --host HOST [--name NAME] [--user] [--reason TEXT] [--dry-run] [--json]\n\n" +
			"Reads the loaded unit's file and drop-ins from the host, parses them and records the\n" +
			"declaration: complete (program and args) when stado can render the same unit back,\n" +
			"path-only with the reason otherwise. A unit already declared is refused.\n\n" +
			"example:\n   stado service adopt legacy-api.service --host host2 --reason \"take over by hand-installed unit\"",
		Flags: append([]ucli.Flag{
			hostFlag("the target running the unit"),
			&ucli.StringFlag{Name: "name", Usage: "the declaration's name (default: from the unit)"},
			&ucli.BoolFlag{Name: "user", Usage: "a unit of the login user's manager"},
			reasonFlag(), dryRunFlag(),
		}, sshFlags()...),
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return usagef("service adopt takes one UNIT")
			}
			return runServiceAdopt(c.Context, env, serviceAdoptOptions{Unit: c.Args().First(), Host: c.String("host"), Name: c.String("name"),
				User: c.Bool("user"), Reason: c.String("reason"), DryRun: c.Bool("dry-run"), Dialer: dialerFrom(c)})
		},
	}, true)
}

// AdoptResult is what adopt recorded (or would record).
type AdoptResult struct {
	Kind     string           `json:"kind"`
	Host     string           `json:"host"`
	Unit     string           `json:"unit"`
	Path     string           `json:"path,omitempty"`
	Service  registry.Service `json:"service"`
	Complete bool             `json:"complete"`
	Reason   string           `json:"incomplete_reason,omitempty"`
	Revision int64            `json:"registry_revision,omitempty"`
	DryRun   bool             `json:"dry_run,omitempty"`
	Error    *HostError       `json:"error,omitempty"`
}

func alreadyDeclared(name, host string) *Refusal {
	return &Refusal{Code: "already_declared", Message: fmt.Sprintf("%s is already declared on %s", name, host),
		Hint: "stado service show " + name + " prints the declaration"}
}

func runServiceAdopt(ctx context.Context, env *Env, o serviceAdoptOptions) error {
	w, err := openWriteContext(ctx, env)
	if err != nil {
		return err
	}
	defer w.Close()
	t, err := w.target(o.Host)
	if err != nil {
		return err
	}
	if _, ok := t.Service(o.Unit); ok {
		return alreadyDeclared(o.Unit, t.Name)
	}
	if _, ok := w.cat.RecoveryEntry(o.Unit); ok {
		return refuse("recovery_unit", "%s is on the fixed recovery list: the host repair step manages it, so it is not adopted", o.Unit)
	}
	res := AdoptResult{Kind: "stado.service.adopt", Host: t.Name, Unit: o.Unit, DryRun: o.DryRun}
	err = adoptOne(ctx, env, w, t, o, &res)
	if err != nil {
		var ref *Refusal
		if env.JSON && !errors.As(err, &ref) {
			res.Error = describeHostError(t.Name, err)
			_ = printJSON(env, res)
		}
		return err
	}
	if env.JSON {
		return printJSON(env, res)
	}
	verb := "adopted"
	if o.DryRun {
		verb = "would adopt"
	}
	fmt.Fprintf(env.Stdout, "%s: %s %s as %s (%s)", t.Name, verb, o.Unit, res.Service.Name, res.Path)
	if res.Complete {
		fmt.Fprintf(env.Stdout, ", complete: %s %s", res.Service.Program, strings.Join(quoteWords(res.Service.Args), " "))
	} else {
		fmt.Fprintf(env.Stdout, ", declaration_incomplete: %s", res.Reason)
	}
	if res.Revision > 0 {
		fmt.Fprintf(env.Stdout, ", registry revision %d", res.Revision)
	}
	fmt.Fprintln(env.Stdout)
	return nil
}

func adoptOne(ctx context.Context, env *Env, w *writeContext, t registry.Target, o serviceAdoptOptions, res *AdoptResult) error {
	pool := channel.NewPool(o.Dialer)
	defer pool.Close()
	hs := hostSession{pool: pool, target: t}
	scope := registry.ScopeSystem
	if o.User {
		scope = registry.ScopeUser
	}
	v, err := hs.version(ctx)
	if err != nil {
		return err
	}
	verdict, file, err := hs.show(ctx, scope, o.Unit)
	if err != nil {
		return err
	}
	if verdict.State == units.StateMissing {
		return refuse("not_found", "unit %s is not loaded on %s", o.Unit, t.Name)
	}
	if file == nil {
		return refuse("not_found", "unit %s on %s has no unit file to adopt", o.Unit, t.Name)
	}
	dropins := make([][]byte, len(file.DropIns))
	for i, d := range file.DropIns {
		dropins[i] = []byte(d.Content)
	}
	parsed, err := units.ParseFile(file.Path, []byte(file.Content), dropins)
	if err != nil {
		return fmt.Errorf("%s: adopt %s: %w", t.Name, o.Unit, err)
	}
	s := parsed.Service
	if o.Name != "" {
		s.Name = o.Name
	}
	if parsed.Complete {
		s = units.Canonical(s, t.OS, v.Home)
	}
	if _, ok := t.Service(s.Name); ok {
		return alreadyDeclared(s.Name, t.Name)
	}
	res.Path, res.Service, res.Complete, res.Reason = file.Path, s, parsed.Complete, parsed.Reason
	res.Service.Env = maskEnv(s.Env, false)
	if o.DryRun {
		return nil
	}
	reason := defaultReason(o.Reason, "service adopt %s on %s", o.Unit, t.Name)
	_, meta, err := registry.Update(ctx, w.store, reason, func(d *registry.Document) error {
		dt, ok := d.Target(t.Name)
		if !ok {
			return refuse("not_found", "target %s left the registry", t.Name)
		}
		if _, ok := dt.Service(s.Name); ok {
			return alreadyDeclared(s.Name, t.Name)
		}
		if _, ok := dt.Service(s.Unit); ok {
			return alreadyDeclared(s.Unit, t.Name)
		}
		dt.Services = append(dt.Services, s)
		return nil
	})
	if err != nil {
		return err
	}
	res.Revision = meta.Revision
	return nil
}

// ---------------------------------------------------------------- retire

type serviceRetireOptions struct {
	Unit   string
	Host   string
	Reason string
	DryRun bool
	Dialer *channel.Dialer
}

func newServiceRetireCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "retire",
		Usage: "stop a declared unit, remove it from its host and withdraw its declaration",
		UsageText: "stado service retire UNIT --host HOST [--reason TEXT] [--dry-run] [--json]\n\n" +
			"UNIT is the declaration's name or unit. A unit no declaration covers is refused with not_found.\n\n" +
			"example:\n   stado service retire legacy-api --host host2 --reason \"replaced by brama\"",
		Flags: append([]ucli.Flag{hostFlag("the target declaring it"), reasonFlag(), dryRunFlag()}, sshFlags()...),
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return usagef("service retire takes one UNIT")
			}
			return runServiceRetire(c.Context, env, serviceRetireOptions{Unit: c.Args().First(), Host: c.String("host"),
				Reason: c.String("reason"), DryRun: c.Bool("dry-run"), Dialer: dialerFrom(c)})
		},
	}, true)
}

// WithdrawResult is what retire and remove did (or would do).
type WithdrawResult struct {
	Kind      string           `json:"kind"`
	Host      string           `json:"host"`
	Service   registry.Service `json:"service"`
	Path      string           `json:"path,omitempty"`
	UnitFound bool             `json:"unit_file_removed,omitempty"`
	Revision  int64            `json:"registry_revision,omitempty"`
	DryRun    bool             `json:"dry_run,omitempty"`
	Plan      []string         `json:"plan,omitempty"`
	Error     *HostError       `json:"error,omitempty"`
}

func runServiceRetire(ctx context.Context, env *Env, o serviceRetireOptions) error {
	w, err := openWriteContext(ctx, env)
	if err != nil {
		return err
	}
	defer w.Close()
	t, s, err := w.declared(o.Host, o.Unit)
	if err != nil {
		return err
	}
	res := WithdrawResult{Kind: "stado.service.retire", Host: t.Name, Service: s, DryRun: o.DryRun}
	res.Service.Env = maskEnv(s.Env, false)
	err = retireOne(ctx, w, t, s, o, &res)
	if err != nil {
		if env.JSON {
			res.Error = describeHostError(t.Name, err)
			_ = printJSON(env, res)
		}
		return err
	}
	if env.JSON {
		return printJSON(env, res)
	}
	if o.DryRun {
		fmt.Fprintf(env.Stdout, "%s: would %s\n", t.Name, strings.Join(res.Plan, ", then "))
		return nil
	}
	fmt.Fprintf(env.Stdout, "%s: retired %s (%s): unit stopped and removed from %s, declaration withdrawn at registry revision %d\n",
		t.Name, s.Name, s.Unit, res.Path, res.Revision)
	return nil
}

func retireOne(ctx context.Context, w *writeContext, t registry.Target, s registry.Service, o serviceRetireOptions, res *WithdrawResult) error {
	pool := channel.NewPool(o.Dialer)
	defer pool.Close()
	hs := hostSession{pool: pool, target: t}
	v, err := hs.version(ctx)
	if err != nil {
		return err
	}
	res.Path = units.UnitPath(s, t.OS, v.Home)
	res.Plan = []string{"unit-remove " + s.Unit + " " + res.Path + " (stops and unloads it)", fmt.Sprintf("withdraw declaration %s from %s", s.Name, t.Name)}
	if o.DryRun {
		return nil
	}
	var rm removeResult
	if err := hs.call(ctx, channel.Command{Verb: channel.VerbUnitRemove, Scope: s.EffectiveScope(), Units: []string{s.Unit}, Path: res.Path}, nil, &rm); err != nil {
		return err
	}
	res.UnitFound = rm.Removed
	reason := defaultReason(o.Reason, "service retire %s on %s", s.Name, t.Name)
	rev, err := withdraw(ctx, w.store, t.Name, s.Name, reason)
	if err != nil {
		return &stagedError{host: t.Name, stage: stageRegistry, err: err}
	}
	res.Revision = rev
	return nil
}

// withdraw removes host's declaration name from the registry; an absent
// one is the not_found refusal.
func withdraw(ctx context.Context, st registry.Store, host, name, reason string) (int64, error) {
	_, meta, err := registry.Update(ctx, st, reason, func(d *registry.Document) error {
		t, ok := d.Target(host)
		if !ok {
			return refuse("not_found", "no target %q in the registry", host)
		}
		for i := range t.Services {
			if t.Services[i].Name == name {
				t.Services = append(t.Services[:i], t.Services[i+1:]...)
				return nil
			}
		}
		return notManaged(name, host)
	})
	return meta.Revision, err
}

// ---------------------------------------------------------------- remove

type serviceRemoveOptions struct {
	Name   string
	Host   string
	Reason string
	DryRun bool
}

func newServiceRemoveCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "remove",
		Usage: "withdraw a declaration from the registry, leaving the host untouched (no SSH)",
		UsageText: "stado service remove NAME --host HOST [--reason TEXT] [--dry-run] [--json]\n\n" +
			"A declaration that is not there is refused with not_found (exit 3), also when remove is repeated.\n\n" +
			"example:\n   stado service remove legacy-api --host host2 --reason \"host rebuilt without it\"",
		// the ssh flags are accepted so every write command takes the same
		// flags; remove opens no connection
		Flags: append([]ucli.Flag{hostFlag("the target declaring it"), reasonFlag(), dryRunFlag()}, sshFlags()...),
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return usagef("service remove takes one NAME")
			}
			return runServiceRemove(c.Context, env, serviceRemoveOptions{Name: c.Args().First(), Host: c.String("host"), Reason: c.String("reason"), DryRun: c.Bool("dry-run")})
		},
	}, true)
}

func runServiceRemove(ctx context.Context, env *Env, o serviceRemoveOptions) error {
	w, err := openWriteContext(ctx, env)
	if err != nil {
		return err
	}
	defer w.Close()
	t, s, err := w.declared(o.Host, o.Name)
	if err != nil {
		return err
	}
	res := WithdrawResult{Kind: "stado.service.remove", Host: t.Name, Service: s, DryRun: o.DryRun,
		Plan: []string{fmt.Sprintf("withdraw declaration %s from %s (the host keeps its unit)", s.Name, t.Name)}}
	res.Service.Env = maskEnv(s.Env, false)
	if !o.DryRun {
		rev, err := withdraw(ctx, w.store, t.Name, s.Name, defaultReason(o.Reason, "service remove %s on %s", s.Name, t.Name))
		if err != nil {
			return err
		}
		res.Revision = rev
	}
	if env.JSON {
		return printJSON(env, res)
	}
	if o.DryRun {
		fmt.Fprintf(env.Stdout, "%s: would %s\n", t.Name, res.Plan[0])
		return nil
	}
	fmt.Fprintf(env.Stdout, "%s: declaration %s withdrawn at registry revision %d; the host's unit %s is untouched\n", t.Name, s.Name, res.Revision, s.Unit)
	return nil
}

// ---------------------------------------------------------------- restart

type serviceRestartOptions struct {
	Name     string
	Hosts    []string
	DryRun   bool
	Parallel int
	Dialer   *channel.Dialer
}

func newServiceRestartCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "restart",
		Usage: "restart a declared service through its init system on every host declaring it",
		UsageText: "stado service restart NAME [--host HOST...] [--dry-run] [--parallel N] [--json]\n\n" +
			"A failed state is cleared first. One result line per host as it completes; a host that cannot\n" +
			"be reached reports its stage and the others carry on.\n\n" +
			"example:\n   stado service restart brama --host host1 --host host3",
		Flags: append([]ucli.Flag{hostsFlag("only this target (repeatable; default every target declaring it)"), dryRunFlag(), parallelFlag()}, sshFlags()...),
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return usagef("service restart takes one NAME")
			}
			return runServiceRestart(c.Context, env, serviceRestartOptions{Name: c.Args().First(), Hosts: c.StringSlice("host"),
				DryRun: c.Bool("dry-run"), Parallel: c.Int("parallel"), Dialer: dialerFrom(c)})
		},
	}, true)
}

// RestartResult is one host's outcome of restart.
type RestartResult struct {
	Host    string         `json:"host"`
	OK      bool           `json:"ok"`
	Service string         `json:"service"`
	Unit    string         `json:"unit"`
	Verdict *units.Verdict `json:"verdict,omitempty"`
	DryRun  bool           `json:"dry_run,omitempty"`
	Error   *HostError     `json:"error,omitempty"`
}

// declaringTargets are the targets declaring name (all, or those named in
// hosts, each of which must declare it).
func (w *writeContext) declaringTargets(name string, hosts []string) ([]registry.Target, map[string]registry.Service, error) {
	decl := map[string]registry.Service{}
	var targets []registry.Target
	add := func(t registry.Target) bool {
		s, ok := t.Service(name)
		if ok {
			targets = append(targets, t)
			decl[t.Name] = *s
		}
		return ok
	}
	if len(hosts) == 0 {
		for _, t := range w.doc.Targets {
			add(t)
		}
		if len(targets) == 0 {
			return nil, nil, refuse("not_found", "%s is not a registry-managed service on any target", name)
		}
		return targets, decl, nil
	}
	seen := map[string]bool{}
	for _, h := range hosts {
		if seen[h] {
			continue
		}
		seen[h] = true
		t, err := w.target(h)
		if err != nil {
			return nil, nil, err
		}
		if !add(t) {
			return nil, nil, notManaged(name, h)
		}
	}
	return targets, decl, nil
}

func runServiceRestart(ctx context.Context, env *Env, o serviceRestartOptions) error {
	w, err := openWriteContext(ctx, env)
	if err != nil {
		return err
	}
	defer w.Close()
	targets, decl, err := w.declaringTargets(o.Name, o.Hosts)
	if err != nil {
		return err
	}
	order := make([]string, len(targets))
	for i, t := range targets {
		order[i] = t.Name
	}
	pool := channel.NewPool(o.Dialer)
	defer pool.Close()
	results := map[string]RestartResult{}
	errs := map[string]error{}
	var mu sync.Mutex
	channel.FanOut(ctx, targets, o.Parallel, func(ctx context.Context, t registry.Target) channel.Result {
		s := decl[t.Name]
		r := RestartResult{Service: s.Name, Unit: s.Unit, DryRun: o.DryRun}
		if o.DryRun {
			return channel.Result{Value: r}
		}
		v, err := hostSession{pool: pool, target: t}.control(ctx, channel.VerbUnitRestart, s.EffectiveScope(), s.Unit)
		if err == nil {
			r.Verdict = &v
		}
		return channel.Result{Value: r, Err: err}
	}, func(res channel.Result) {
		r, ok := res.Value.(RestartResult)
		if !ok { // not started: the command was cancelled
			r = RestartResult{Service: decl[res.Host].Name, Unit: decl[res.Host].Unit}
		}
		r.Host, r.OK, r.Error = res.Host, res.Err == nil, describeHostError(res.Host, res.Err)
		mu.Lock()
		results[res.Host], errs[res.Host] = r, res.Err
		mu.Unlock()
		if env.JSON {
			return
		}
		switch {
		case res.Err != nil:
			fmt.Fprintf(env.Stdout, "%s: failed: %s\n", r.Host, strings.TrimPrefix(hostPrefixed(r.Host, res.Err), r.Host+": "))
		case o.DryRun:
			fmt.Fprintf(env.Stdout, "%s: would restart %s\n", r.Host, r.Unit)
		default:
			fmt.Fprintf(env.Stdout, "%s: restarted %s, %s pid %d\n", r.Host, r.Unit, r.Verdict.State, r.Verdict.PID)
		}
	})
	if env.JSON {
		list := make([]RestartResult, len(order))
		for i, h := range order {
			list[i] = results[h]
		}
		if err := printJSON(env, map[string]any{"kind": "stado.service.restart", "service": o.Name, "dry_run": o.DryRun, "results": list}); err != nil {
			return err
		}
	}
	return fanOutError("service restart "+o.Name, errs, order)
}

// ---------------------------------------------------------------- logs

type serviceLogsOptions struct {
	Name   string
	Host   string
	Lines  int
	Dialer *channel.Dialer
}

func newServiceLogsCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "logs",
		Usage: "read the last lines a declared service printed on its host",
		UsageText: "stado service logs NAME --host HOST [--lines N] [--json]\n\n" +
			"NAME is a declaration on HOST or a catalog product. For a loaded unit without a declaration\n" +
			"use stado service unit logs.\n\n" +
			"example:\n   stado service logs brama --host host2 --lines 50",
		Flags: append([]ucli.Flag{hostFlag("the target"), linesFlag()}, sshFlags()...),
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return usagef("service logs takes one NAME")
			}
			return runServiceLogs(c.Context, env, serviceLogsOptions{Name: c.Args().First(), Host: c.String("host"), Lines: c.Int("lines"), Dialer: dialerFrom(c)})
		},
	}, true)
}

func checkLines(n int) error {
	if n < 1 || n > channel.MaxLogLines {
		return usagef("--lines must be between 1 and %d", channel.MaxLogLines)
	}
	return nil
}

// LogsResult is the --json form of service logs and service unit logs.
type LogsResult struct {
	Kind    string     `json:"kind"`
	Host    string     `json:"host"`
	Service string     `json:"service,omitempty"`
	Unit    string     `json:"unit"`
	Lines   []string   `json:"lines"`
	Error   *HostError `json:"error,omitempty"`
}

func runServiceLogs(ctx context.Context, env *Env, o serviceLogsOptions) error {
	if err := checkLines(o.Lines); err != nil {
		return err
	}
	w, err := openWriteContext(ctx, env)
	if err != nil {
		return err
	}
	defer w.Close()
	t, err := w.target(o.Host)
	if err != nil {
		return err
	}
	s, ok := t.Service(o.Name)
	var svc registry.Service
	switch {
	case ok:
		svc = *s
	default:
		p, found := w.cat.Lookup(o.Name)
		if !found || p.Units.For(t.OS) == "" {
			return notManaged(o.Name, t.Name)
		}
		svc = p.Declaration(t.OS, registry.ScopeSystem)
	}
	return unitLogs(ctx, env, o.Dialer, t, svc.Name, svc.EffectiveScope(), svc.Unit, o.Lines, "stado.service.logs")
}

func unitLogs(ctx context.Context, env *Env, d *channel.Dialer, t registry.Target, name, scope, unit string, lines int, kind string) error {
	pool := channel.NewPool(d)
	defer pool.Close()
	var res logsResult
	err := hostSession{pool: pool, target: t}.call(ctx, channel.Command{Verb: channel.VerbUnitLogs, Scope: scope, Units: []string{unit}, Lines: lines}, nil, &res)
	doc := LogsResult{Kind: kind, Host: t.Name, Service: name, Unit: unit, Lines: res.Lines}
	if doc.Lines == nil {
		doc.Lines = []string{}
	}
	if err != nil {
		err = notLoadedOn(err, unit, t.Name)
		if env.JSON {
			doc.Error = describeHostError(t.Name, err)
			_ = printJSON(env, doc)
		}
		return err
	}
	if env.JSON {
		return printJSON(env, doc)
	}
	for _, l := range doc.Lines {
		fmt.Fprintln(env.Stdout, l)
	}
	return nil
}

// notLoadedOn turns the host's not_found refusal into one naming the host.
func notLoadedOn(err error, unit, host string) error {
	var re *channel.RemoteError
	var r *channel.Refusal
	if errors.As(err, &re) && re.Stage == channel.StageRemoteRefusal && errors.As(err, &r) && r.Code == "not_found" {
		return &Refusal{Code: "not_found", Message: fmt.Sprintf("unit %s is not loaded on %s", unit, host), Err: err}
	}
	return err
}

// ---------------------------------------------------------------- env

type serviceEnvOptions struct {
	Name       string
	Host       string
	ShowValues bool
	Dialer     *channel.Dialer
}

func newServiceEnvCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "env",
		Usage: "print the environment a declared service's installed unit gives its program",
		UsageText: "stado service env NAME --host HOST [--show-values] [--json]\n\n" +
			"Values are masked unless --show-values is given.\n\n" +
			"example:\n   stado service env skarbiec --host host1",
		Flags: append([]ucli.Flag{hostFlag("the target"), &ucli.BoolFlag{Name: "show-values", Usage: "print values instead of a mask"}}, sshFlags()...),
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return usagef("service env takes one NAME")
			}
			return runServiceEnv(c.Context, env, serviceEnvOptions{Name: c.Args().First(), Host: c.String("host"), ShowValues: c.Bool("show-values"), Dialer: dialerFrom(c)})
		},
	}, true)
}

func runServiceEnv(ctx context.Context, env *Env, o serviceEnvOptions) error {
	w, err := openWriteContext(ctx, env)
	if err != nil {
		return err
	}
	defer w.Close()
	t, s, err := w.declared(o.Host, o.Name)
	if err != nil {
		return err
	}
	pool := channel.NewPool(o.Dialer)
	defer pool.Close()
	var res EnvResult
	err = hostSession{pool: pool, target: t}.call(ctx, channel.Command{Verb: channel.VerbUnitEnv, Scope: s.EffectiveScope(), Units: []string{s.Unit}}, nil, &res)
	doc := map[string]any{"kind": "stado.service.env", "host": t.Name, "service": s.Name, "unit": s.Unit, "masked": !o.ShowValues}
	if err != nil {
		err = notLoadedOn(err, s.Unit, t.Name)
		if env.JSON {
			doc["error"] = describeHostError(t.Name, err)
			_ = printJSON(env, doc)
		}
		return err
	}
	masked := maskEnv(res.Env, o.ShowValues)
	if masked == nil {
		masked = map[string]string{}
	}
	if env.JSON {
		doc["path"], doc["env"], doc["source"] = res.Path, masked, res.Source
		return printJSON(env, doc)
	}
	for _, k := range sortedEnvKeys(masked) {
		fmt.Fprintf(env.Stdout, "%s=%s\n", k, masked[k])
	}
	return nil
}

// ---------------------------------------------------------------- unit show / logs

func newServiceUnitCommand(env *Env) *ucli.Command {
	return &ucli.Command{
		Name:  "unit",
		Usage: "inspect any loaded unit on a host, declared or not",
		Subcommands: []*ucli.Command{
			newServiceUnitShowCommand(env),
			newServiceUnitLogsCommand(env),
		},
	}
}

type serviceUnitOptions struct {
	Unit   string
	Host   string
	User   bool
	Lines  int
	Dialer *channel.Dialer
}

func (o serviceUnitOptions) scope() string {
	if o.User {
		return registry.ScopeUser
	}
	return registry.ScopeSystem
}

func newServiceUnitShowCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "show",
		Usage: "show a loaded unit's state on a host, with the failing verdict of a crash loop",
		UsageText: "stado service unit show UNIT --host HOST [--user] [--json]\n\n" +
			"A unit the host's init system does not hold is refused with not_found.\n\n" +
			"example:\n   stado service unit show ssh.service --host host1 --json",
		Flags: append([]ucli.Flag{hostFlag("the target"), &ucli.BoolFlag{Name: "user", Usage: "a unit of the login user's manager"}}, sshFlags()...),
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return usagef("service unit show takes one UNIT")
			}
			return runServiceUnitShow(c.Context, env, serviceUnitOptions{Unit: c.Args().First(), Host: c.String("host"), User: c.Bool("user"), Dialer: dialerFrom(c)})
		},
	}, true)
}

// UnitShowResult is the --json form of service unit show.
type UnitShowResult struct {
	Kind    string         `json:"kind"`
	Host    string         `json:"host"`
	Unit    string         `json:"unit"`
	Path    string         `json:"path,omitempty"`
	Verdict *units.Verdict `json:"verdict,omitempty"`
	Error   *HostError     `json:"error,omitempty"`
}

func runServiceUnitShow(ctx context.Context, env *Env, o serviceUnitOptions) error {
	w, err := openWriteContext(ctx, env)
	if err != nil {
		return err
	}
	defer w.Close()
	t, err := w.target(o.Host)
	if err != nil {
		return err
	}
	pool := channel.NewPool(o.Dialer)
	defer pool.Close()
	doc := UnitShowResult{Kind: "stado.service.unit.show", Host: t.Name, Unit: o.Unit}
	v, file, err := hostSession{pool: pool, target: t}.show(ctx, o.scope(), o.Unit)
	if err == nil && v.State == units.StateMissing {
		err = refuse("not_found", "unit %s is not loaded on %s", o.Unit, t.Name)
	}
	if err != nil {
		if env.JSON {
			doc.Error = describeHostError(t.Name, err)
			_ = printJSON(env, doc)
		}
		return err
	}
	doc.Verdict = &v
	if file != nil {
		doc.Path = file.Path
	}
	if env.JSON {
		return printJSON(env, doc)
	}
	line := fmt.Sprintf("%s: %s  %s", t.Name, v.Unit, v.State)
	if v.PID > 0 {
		line += fmt.Sprintf("  pid %d", v.PID)
	}
	if v.Starts > 0 {
		line += fmt.Sprintf("  last exit %d  starts %d", v.LastExit, v.Starts)
	}
	if v.Detail != "" {
		line += "  (" + v.Detail + ")"
	}
	fmt.Fprintln(env.Stdout, line)
	if v.Sentence != "" {
		fmt.Fprintln(env.Stdout, v.Sentence)
	}
	return nil
}

func newServiceUnitLogsCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "logs",
		Usage: "read the last lines of any loaded unit on a host",
		UsageText: "stado service unit logs UNIT --host HOST [--lines N] [--user] [--json]\n\n" +
			"example:\n   stado service unit logs ssh.service --host host1 --lines 20",
		Flags: append([]ucli.Flag{hostFlag("the target"), linesFlag(), &ucli.BoolFlag{Name: "user", Usage: "a unit of the login user's manager"}}, sshFlags()...),
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return usagef("service unit logs takes one UNIT")
			}
			return runServiceUnitLogs(c.Context, env, serviceUnitOptions{Unit: c.Args().First(), Host: c.String("host"), User: c.Bool("user"), Lines: c.Int("lines"), Dialer: dialerFrom(c)})
		},
	}, true)
}

func runServiceUnitLogs(ctx context.Context, env *Env, o serviceUnitOptions) error {
	if err := checkLines(o.Lines); err != nil {
		return err
	}
	w, err := openWriteContext(ctx, env)
	if err != nil {
		return err
	}
	defer w.Close()
	t, err := w.target(o.Host)
	if err != nil {
		return err
	}
	return unitLogs(ctx, env, o.Dialer, t, "", o.scope(), o.Unit, o.Lines, "stado.service.unit.logs")
}
