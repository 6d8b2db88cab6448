package cli

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/repair"
	"github.com/wisent/stado/units"
)

// hostContributors builds what `stado host run` adds to every pass: the
// answering probes of this host's own services, and the peer recovery of
// other hosts' services this host's resolver sees standing.
func hostContributors(ctx context.Context, env *Env, st registry.Store, host string, mgr units.Manager) ([]beacon.Contributor, func(), error) {
	cs, stop, err := answeringContributors(ctx, env, st, host, mgr)
	if err != nil {
		return nil, nil, err
	}
	peer, closePeer := peerContributor(env, st)
	return append(cs, peer), func() { closePeer(); stop() }, nil
}

// answeringContributors builds the answering contributor of a host
// process: the catalog of the store, the Local executor over the host's
// own manager, the register under $HOME and alerts from the registry.
func answeringContributors(ctx context.Context, env *Env, st registry.Store, host string, mgr units.Manager) ([]beacon.Contributor, func(), error) {
	cat, err := catalog.Load(ctx, st)
	if err != nil {
		var val *registry.ValidationError
		if errors.As(err, &val) {
			return nil, nil, err
		}
		cat = catalog.Shipped()
	}
	a := &repair.Answerer{
		Catalog:  cat,
		Executor: &repair.Local{Catalog: cat, Host: host, Managers: map[string]units.Manager{registry.ScopeSystem: mgr}, Home: homeDir(env)},
		Register: repair.HomeRegister(homeDir(env)),
		Now:      env.Now,
		Logger:   env.Logger,
	}
	return []beacon.Contributor{a}, a.Close, nil
}

// repairOptions are the flags of stado repair.
type repairOptions struct {
	Service string
	Step    string
	Target  string
	Apply   bool
	// Executor reaches the target for --apply; nil means the host channel
	// through Dialer.
	Executor repair.Executor
	Dialer   *channel.Dialer
}

func newRepairCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "repair",
		Usage: "show, or run with --apply, one repair step of a service on its host",
		UsageText: "stado repair SERVICE --step NAME --target HOST [--apply] [--json]\n\n" +
			"Without --apply it prints the argv, environment (secret-looking values masked) and timeout that\n" +
			"would run. With --apply the step runs on HOST through the same path a standing answering question\n" +
			"takes. `stado repair stado --step host` restarts the fixed recovery list.\n\n" +
			"example:\n   stado repair skarbiec --step crypto --target host2 --apply --json",
		Flags: append([]ucli.Flag{
			&ucli.StringFlag{Name: "step", Usage: "the repair-catalog step to run", Required: true},
			&ucli.StringFlag{Name: "target", Usage: "the registry target (host) to run it on", Required: true},
			&ucli.BoolFlag{Name: "apply", Usage: "run the step (default: only show it)"},
		}, sshFlags()...),
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return usagef("repair takes one SERVICE argument")
			}
			return runRepair(c.Context, env, repairOptions{Service: c.Args().First(), Step: c.String("step"), Target: c.String("target"), Apply: c.Bool("apply"), Dialer: dialerFrom(c)})
		},
	}, true)
}

// repairPlanDoc is what stado repair prints.
type repairPlanDoc struct {
	Kind    string             `json:"kind"`
	Service string             `json:"service"`
	Target  string             `json:"target"`
	Step    string             `json:"step"`
	OS      string             `json:"os"`
	Argv    []string           `json:"argv"`
	Env     map[string]string  `json:"env,omitempty"`
	Timeout int                `json:"timeout_seconds"`
	Applied bool               `json:"applied"`
	Report  *repair.StepReport `json:"report,omitempty"`
}

// repairExecutor is the executor --apply uses when none is given: the
// target's host channel over SSH, the same Remote executor peer recovery
// uses.
var repairExecutor = func(ctx context.Context, env *Env, d *channel.Dialer, doc *registry.Document, cat *catalog.Catalog) (repair.Executor, func(), error) {
	if d == nil {
		d = &channel.Dialer{}
	}
	pool := channel.NewPool(d)
	return &repair.Remote{Pool: pool, Target: repair.TargetsOf(doc), Catalog: cat, Now: env.Now}, func() { pool.Close() }, nil
}

func runRepair(ctx context.Context, env *Env, o repairOptions) error {
	st, err := openStore(ctx, env)
	if err != nil {
		return err
	}
	defer st.Close()
	doc, _, err := registry.Load(ctx, st)
	if err != nil && !errors.Is(err, registry.ErrNotFound) {
		return err
	}
	if doc == nil {
		doc = &registry.Document{Version: 1}
	}
	t, ok := doc.Target(o.Target)
	if !ok {
		return refuse("not_found", "the registry declares no target %q", o.Target)
	}
	cat, err := catalog.Load(ctx, st)
	if err != nil {
		return err
	}
	if _, declared := t.Service(o.Service); !declared {
		if _, ok := cat.Lookup(o.Service); !ok {
			if _, ok := cat.RecoveryEntry(o.Service); !ok {
				return refuse("not_found", "%s declares no service %q and the catalog has no such product", o.Target, o.Service)
			}
		}
	}
	goos := t.OS
	if goos == "" {
		goos = runtime.GOOS
	}
	inputs := repair.StepInputs(doc.ServiceResolver.RefreshSeconds)
	cmd, err := repair.ResolveStep(cat, goos, o.Step, inputs)
	if err != nil {
		return err
	}
	out := repairPlanDoc{Kind: "stado.repair.plan", Service: o.Service, Target: o.Target, Step: o.Step, OS: goos,
		Argv: cmd.Argv, Env: maskSecrets(cmd.Env), Timeout: cmd.TimeoutSeconds}
	if o.Apply {
		ex := o.Executor
		if ex == nil {
			e, closeFn, err := repairExecutor(ctx, env, o.Dialer, doc, cat)
			if err != nil {
				return err
			}
			defer closeFn()
			ex = e
		}
		reps := repair.RunSteps(ctx, ex, o.Target, []string{o.Step}, inputs)
		out.Kind, out.Applied, out.Report = "stado.repair", true, &reps[0]
	}
	if env.JSON {
		if err := printJSON(env, out); err != nil {
			return err
		}
	} else {
		printRepairPlan(env, out)
	}
	if out.Report != nil && !out.Report.OK {
		code := out.Report.Code
		if code == "" {
			code = repair.CodeStepFailed
		}
		return refuse(refusal.Code(code), "repair step %s on %s: %s", o.Step, o.Target, out.Report.Refusal)
	}
	return nil
}

func printRepairPlan(env *Env, d repairPlanDoc) {
	w := env.Stdout
	verb := "would run"
	if d.Applied {
		verb = "ran"
	}
	fmt.Fprintf(w, "%s repair step %s for %s on %s (%s):\n", verb, d.Step, d.Service, d.Target, d.OS)
	fmt.Fprintf(w, "  argv:    %s\n", strings.Join(quoteArgs(d.Argv), " "))
	keys := make([]string, 0, len(d.Env))
	for k := range d.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "  env:     %s=%s\n", k, d.Env[k])
	}
	fmt.Fprintf(w, "  timeout: %ds\n", d.Timeout)
	if r := d.Report; r != nil {
		if r.OK {
			fmt.Fprintf(w, "  result:  ok in %d ms\n", r.ElapsedMS)
		} else {
			fmt.Fprintf(w, "  result:  refused (%s): %s\n", r.Code, r.Refusal)
		}
		if r.Output != "" {
			fmt.Fprintf(w, "  output:  %s\n", strings.ReplaceAll(r.Output, "\n", "\n           "))
		}
	} else {
		fmt.Fprintln(w, "nothing ran; add --apply to run it")
	}
}

func quoteArgs(argv []string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t'\"\\$;&|<>*?()") {
			out[i] = fmt.Sprintf("%q", a)
		} else {
			out[i] = a
		}
	}
	return out
}

// secretWords mark a variable whose value must not be printed.
var secretWords = []string{"SECRET", "TOKEN", "PASSWORD", "PASSWD", "PASSPHRASE", "KEY", "CREDENTIAL", "AUTH", "PRIVATE"}

// maskSecrets returns env with the values of secret-looking names masked.
func maskSecrets(env map[string]string) map[string]string {
	if len(env) == 0 {
		return nil
	}
	out := make(map[string]string, len(env))
	for k, v := range env {
		out[k] = v
		up := strings.ToUpper(k)
		for _, w := range secretWords {
			if strings.Contains(up, w) {
				out[k] = "********"
				break
			}
		}
	}
	return out
}

// recoveriesOptions are the flags of service recoveries.
type recoveriesOptions struct {
	Service string
}

func newServiceRecoveriesCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "recoveries",
		Usage: "read this machine's recovery register (~/.stado/service-recoveries.jsonl), oldest first",
		UsageText: "stado service recoveries [--service NAME] [--json]\n\n" +
			"Run it on the host whose recoveries you want (or through ssh): the register is per machine.\n" +
			"A recovery the host could not record is only in its beacon (answering.recording_refusal).\n\n" +
			"example:\n   stado service recoveries --service skarbiec --json",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "service", Usage: "only this service's recoveries"},
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() > 0 {
				return usagef("service recoveries takes no arguments")
			}
			return runServiceRecoveries(c.Context, env, recoveriesOptions{Service: c.String("service")})
		},
	}, true)
}

// recoveriesDoc is the JSON form of service recoveries.
type recoveriesDoc struct {
	Kind       string            `json:"kind"`
	File       string            `json:"file"`
	Service    string            `json:"service,omitempty"`
	Recoveries []repair.Recovery `json:"recoveries"`
}

func runServiceRecoveries(_ context.Context, env *Env, o recoveriesOptions) error {
	reg := repair.HomeRegister(homeDir(env))
	recs, err := reg.Read()
	if err != nil {
		var fe *repair.FileError
		if errors.As(err, &fe) {
			return refuse("register_unreadable", "%v", err)
		}
		return err
	}
	doc := recoveriesDoc{Kind: "stado.service.recoveries", File: reg.Path, Service: o.Service, Recoveries: []repair.Recovery{}}
	for _, r := range recs {
		if o.Service == "" || r.Service == o.Service {
			doc.Recoveries = append(doc.Recoveries, r)
		}
	}
	if env.JSON {
		return printJSON(env, doc)
	}
	w := env.Stdout
	if len(doc.Recoveries) == 0 {
		fmt.Fprintf(w, "no recoveries in %s\n", reg.Path)
		return nil
	}
	for _, r := range doc.Recoveries {
		verdict := "complete"
		if !r.Complete {
			verdict = "incomplete"
		}
		by := ""
		if r.ObservedBy != "" {
			by = " (observed by " + r.ObservedBy + ")"
		}
		fmt.Fprintf(w, "%s  %s on %s (%s)%s: %s\n", r.When.Format("2006-01-02 15:04:05Z07:00"), r.Service, r.Host, r.Unit, by, verdict)
		fmt.Fprintf(w, "  question: %s %s at %s, unanswered %.1fs of bound %.0fs since %s, held requests %d\n",
			r.Question.Method, r.Question.Path, r.Question.Endpoint, r.WaitedSeconds, r.BoundSeconds, r.Since.Format("15:04:05"), r.HeldRequests)
		for _, s := range r.Steps {
			if s.OK {
				fmt.Fprintf(w, "  repair %s: ok\n", s.Step)
			} else {
				fmt.Fprintf(w, "  repair %s: refused (%s): %s\n", s.Step, s.Code, s.Refusal)
			}
		}
		if rs := r.Restart; rs != nil {
			if rs.OK {
				fmt.Fprintf(w, "  restart %s: %s, pid %d\n", rs.Unit, rs.Answer, rs.PID)
			} else {
				fmt.Fprintf(w, "  restart %s: refused (%s): %s\n", rs.Unit, rs.Code, rs.Refusal)
			}
		}
		for _, a := range r.Alerts {
			if a.OK {
				fmt.Fprintf(w, "  alert %s (%s): %s\n", a.Channel, a.Type, a.Answer)
			} else {
				fmt.Fprintf(w, "  alert %s (%s): failed: %s %s\n", a.Channel, a.Type, a.Answer, a.Cause)
			}
		}
	}
	return nil
}
