package cli

import (
	"context"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/fleet"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/register"
	"github.com/wisent/stado/repair"
)

// repairOptions are the flags of stado repair.
type repairOptions struct {
	Service string
	Step    string
	Target  string
	Apply   bool
	// Connect reaches the target's host for --apply: the command's host
	// channel (connectorFrom), the one road every host command takes.
	Connect channel.Connector
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
			&ucli.BoolFlag{Name: "apply", Usage: "run the step (without it: only show it)"},
		}, sshFlags()...),
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return usagef("repair takes one SERVICE argument")
			}
			conn, done := connectorFrom(c, env)
			defer done()
			return runRepair(c.Context, env, repairOptions{Service: c.Args().First(), Step: c.String("step"), Target: c.String("target"), Apply: c.Bool("apply"), Connect: conn})
		},
	}, true)
}

func runRepair(ctx context.Context, env *Env, o repairOptions) error {
	st, err := openStore(ctx, env)
	if err != nil {
		return err
	}
	defer st.Close()
	plan, err := repair.PlanStepIn(ctx, st, o.Service, o.Target, o.Step)
	if err != nil {
		return err
	}
	kind, applied := "stado.repair.plan", error(nil)
	if o.Apply {
		if o.Connect == nil {
			return refuse(refusal.NoManager, "no host channel to reach %s", o.Target)
		}
		kind, applied = "stado.repair", plan.ApplyVia(ctx, o.Connect)
	}
	if err := emit(env, kind, plan, func(t *text) { t.lines(plan.Lines()) }); err != nil {
		return err
	}
	return applied
}

func newServiceRecoveriesCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "recoveries",
		Usage: "read a host's recovery register (~/.stado/service-recoveries.jsonl), oldest first",
		UsageText: "stado service recoveries [--host HOST] [--service NAME] [--json]\n\n" +
			"Without --host, reads this machine's register. With --host, reads that target's register over its\n" +
			"SSH channel (the read-only recoveries verb): the same rows the host reads locally.\n" +
			"A recovery the host could not record is only in its beacon (answering.recording_refusal).\n\n" +
			"example:\n   stado service recoveries --host host2 --service skarbiec --json",
		Flags: append([]ucli.Flag{
			&ucli.StringFlag{Name: "service", Usage: "only this service's recoveries"},
			hostFlag("read this target's register over SSH (default: this machine's)"),
		}, sshFlags()...),
		Action: func(c *ucli.Context) error {
			if c.NArg() > 0 {
				return usagef("service recoveries takes no arguments")
			}
			if host := c.String("host"); host != "" {
				return withFleet(c, env, func(ctx context.Context, f *fleet.Fleet) error {
					return runHostRecoveries(ctx, env, f, host, c.String("service"))
				})
			}
			return runServiceRecoveries(c.Context, env, c.String("service"))
		},
	}, true)
}

// runHostRecoveries reads host's register through its channel.
func runHostRecoveries(ctx context.Context, env *Env, f *fleet.Fleet, host, service string) error {
	res, err := f.Recoveries(ctx, host, service)
	if res.Error == nil && err != nil { // refused before any host
		return err
	}
	return report(env, "stado.service.recoveries", res, err, res.Lines)
}

// runServiceRecoveries reads this machine's register through its own end
// of the host channel (channel/local), the road every register read takes.
func runServiceRecoveries(ctx context.Context, env *Env, service string) error {
	res, err := machine(env).LocalHost().Recoveries(ctx)
	if err != nil {
		return err
	}
	doc := register.Select(res.File, service, res.Recoveries)
	return emit(env, "stado.service.recoveries", doc, func(t *text) { t.lines(doc.Lines()) })
}
