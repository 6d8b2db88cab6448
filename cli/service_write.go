package cli

import (
	"context"
	"fmt"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/convergence"
	"github.com/wisent/stado/fleet"
	"github.com/wisent/stado/printer"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
)

// serviceWriteCommands are the service commands of the write half (package
// fleet), plus show, which reads declarations without SSH. Each parses its
// flags, makes one fleet call and prints the typed result.
func serviceWriteCommands(env *Env) []*ucli.Command {
	return []*ucli.Command{
		newServiceShowCommand(env),
		newServiceEnsureCommand(env),
		newServiceAdoptCommand(env),
		newServiceRetireCommand(env),
		newServiceConvergeCommand(env),
		newServiceRemoveCommand(env),
		newServiceRestartCommand(env),
		newServiceLogsCommand(env),
		newServiceEnvCommand(env),
		newServiceUnitCommand(env),
		newServiceVerifyCommand(env), newServiceServingCommand(env),
	}
}

func reasonFlag() ucli.Flag {
	return &ucli.StringFlag{Name: "reason", Usage: "why: recorded with the registry revision this produces"}
}

func dryRunFlag(shows string) ucli.Flag {
	return &ucli.BoolFlag{Name: "dry-run", Usage: "print " + shows + " and change nothing"}
}

func noDrainFlag() ucli.Flag {
	return &ucli.BoolFlag{Name: "no-drain", Usage: "do not run the product's drain step first (its workloads are left running)"}
}

func hostFlag(usage string) ucli.Flag { return &ucli.StringFlag{Name: "host", Usage: usage} }

func hostsFlag(usage string) ucli.Flag { return &ucli.StringSliceFlag{Name: "host", Usage: usage} }

func linesFlag() ucli.Flag {
	return &ucli.IntFlag{Name: "lines", Value: 100, Usage: "log lines to read (1 to 10000)"}
}

func userFlag() ucli.Flag {
	return &ucli.BoolFlag{Name: "user", Usage: "a unit of the login user's manager"}
}

func showValuesFlag() ucli.Flag {
	return &ucli.BoolFlag{Name: "show-values", Usage: "print environment values and secret arguments instead of a mask"}
}

func scopeOf(user bool) string {
	if user {
		return registry.ScopeUser
	}
	return registry.ScopeSystem
}

// withFleet opens the store and the fleet over the command's host channel,
// runs fn and closes both.
func withFleet(c *ucli.Context, env *Env, fn func(ctx context.Context, f *fleet.Fleet) error) error {
	st, err := openStore(c.Context, env)
	if err != nil {
		return err
	}
	defer st.Close()
	conn, done := connectorFrom(c, env)
	defer done()
	f, err := fleet.Open(c.Context, st, conn)
	if err != nil {
		return err
	}
	if c.IsSet("parallel") {
		f.Parallel = c.Int("parallel")
	}
	return fn(c.Context, f)
}

// oneArg is the command's single positional argument.
func oneArg(c *ucli.Context, what string) (string, error) {
	if c.NArg() != 1 {
		return "", usagef("%s takes one %s", c.Command.FullName(), what)
	}
	return c.Args().First(), nil
}

// writeAction is the action of a write command taking one argument.
func writeAction(env *Env, what string, run func(ctx context.Context, f *fleet.Fleet, c *ucli.Context, arg string) error) ucli.ActionFunc {
	return func(c *ucli.Context) error {
		arg, err := oneArg(c, what)
		if err != nil {
			return err
		}
		return withFleet(c, env, func(ctx context.Context, f *fleet.Fleet) error { return run(ctx, f, c, arg) })
	}
}

// report prints one write-half result as kind: under --json the document
// (a failed operation's document carries its error), otherwise its lines;
// it returns err.
func report(env *Env, kind string, doc any, err error, lines func() []string) error {
	perr := emit(env, kind, doc, func(t *text) {
		if err == nil {
			for _, l := range lines() {
				t.f("%s\n", l)
			}
		}
	})
	if err != nil {
		return err
	}
	return perr
}

// ---------------------------------------------------------------- show

func newServiceShowCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "show",
		Usage: "show a service's declarations and its catalog entry (no SSH); --host adds the host's unit file, drop-ins and state",
		UsageText: "stado service show NAME [--host H] [--show-values] [--json]\n\n" +
			"NAME is a declaration's name or unit, or a catalog product. Environment values and secret\n" +
			"arguments (secret_args) are masked unless --show-values is given. With --host, one channel call reads the unit as host H holds\n" +
			"it (the file the init system loaded, its drop-ins, its state) and how adopt reads it now,\n" +
			"with every blocker: what an incomplete declaration needs to be completed.\n\n" +
			"example:\n   stado service show brama --json\n   stado service show legacy-api --host host2",
		Flags: append([]ucli.Flag{showValuesFlag(), hostFlag("also read the unit as this target holds it (SSH)")}, sshFlags()...),
		Action: writeAction(env, "NAME", func(ctx context.Context, f *fleet.Fleet, c *ucli.Context, name string) error {
			if h := c.String("host"); h != "" {
				res, err := f.ShowOnHost(ctx, name, h, c.Bool("show-values"))
				if err != nil && res.Host == nil {
					return err
				}
				return report(env, "stado.service.show", res, err, res.Lines)
			}
			res, err := f.Show(name, c.Bool("show-values"))
			if err != nil {
				return err
			}
			return report(env, "stado.service.show", res, nil, res.Lines)
		}),
	}, true)
}

// ---------------------------------------------------------------- ensure

func newServiceEnsureCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "ensure",
		Usage: "install a declared service's unit where it changed, start or restart it, and confirm it runs",
		UsageText: "stado service ensure NAME (--host HOST... | --all) [--env KEY=VALUE]... [--as-launch-agent] [--reason TEXT] [--dry-run] [--parallel N] [--json]\n\n" +
			"Renders the unit from the host's declaration, or from the catalog product NAME when the host\n" +
			"declares none (recording that declaration in the registry). A unit whose bytes are unchanged\n" +
			"and that runs is left alone. Each host does the whole ensure in one channel call and confirms\n" +
			"the unit's own process held for --settle. One result line per host as it completes.\n" +
			"--env records values in the declaration (compare-and-swap) before rendering; a catalog\n" +
			"product's required variables must be present. --all with a product nobody declares yet\n" +
			"means every target whose OS the product supports.\n\n" +
			"example:\n   stado service ensure brama --host host2 --reason \"new gateway host\"\n" +
			"   stado service ensure oarbank-agent --all --env OARBANK_COORDINATOR=https://coord:8443/",
		Flags: append([]ucli.Flag{
			hostsFlag("target to ensure it on (repeatable)"),
			&ucli.BoolFlag{Name: "all", Usage: "every target that declares NAME (a catalog product nobody declares: every target it supports)"},
			&ucli.GenericFlag{Name: "env", Value: &assignments{}, Usage: "KEY=VALUE to record in the declaration (repeatable; commas are kept)"},
			&ucli.BoolFlag{Name: "as-launch-agent", Usage: "a catalog product as a per-user unit (launchd agent, systemd --user)"},
			reasonFlag(), dryRunFlag("the plan and the unit diff"), parallelFlag(),
			&ucli.DurationFlag{Name: "wait", Value: 30 * time.Second, Usage: "bound on confirming the unit runs"},
			&ucli.DurationFlag{Name: "settle", Value: time.Second, Usage: "how long a newly started process must keep its pid to count as running"},
		}, sshFlags()...),
		Action: writeAction(env, "NAME", func(ctx context.Context, f *fleet.Fleet, c *ucli.Context, name string) error {
			envs, err := fleet.ParseEnvAssignments(c.Generic("env").(*assignments).list)
			if err != nil {
				return err
			}
			o := fleet.EnsureOptions{Name: name, Hosts: c.StringSlice("host"), All: c.Bool("all"), AsLaunchAgent: c.Bool("as-launch-agent"),
				Reason: c.String("reason"), DryRun: c.Bool("dry-run"), Wait: c.Duration("wait"), Settle: c.Duration("settle"), Env: envs}
			list, err := f.Ensure(ctx, o, func(r fleet.EnsureOutcome) { streamLines(env, r.Lines()) })
			if list == nil {
				return err
			}
			return report(env, "stado.service.ensure", fanOutDoc{name, o.DryRun, list}, err, noLines)
		}),
	}, true)
}

// assignments is a repeatable flag whose values are kept whole (a
// StringSlice would split KEY=a,b at the comma).
type assignments struct{ list []string }

func (a *assignments) Set(v string) error { a.list = append(a.list, v); return nil }
func (a *assignments) String() string     { return "" }

// fanOutDoc is the --json document of a command acting on many hosts.
type fanOutDoc struct {
	Service string `json:"service"`
	DryRun  bool   `json:"dry_run"`
	Results any    `json:"results"`
}

// streamLines prints one host's lines as it completes (text mode only).
func streamLines(env *Env, lines []string) {
	if !env.JSON {
		for _, l := range lines {
			fmt.Fprintln(env.Stdout, printer.EscapeLines(l))
		}
	}
}

func noLines() []string { return nil }

// ---------------------------------------------------------------- adopt

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
			userFlag(), reasonFlag(), dryRunFlag("the declaration it would record"),
		}, sshFlags()...),
		Action: writeAction(env, "UNIT", func(ctx context.Context, f *fleet.Fleet, c *ucli.Context, unit string) error {
			o := fleet.AdoptOptions{Unit: unit, Host: c.String("host"), Name: c.String("name"), User: c.Bool("user"), Reason: c.String("reason"), DryRun: c.Bool("dry-run")}
			res, err := f.Adopt(ctx, o)
			if _, refused := refusal.CodeOf(err); refused {
				return err
			}
			res.Error = fleet.DescribeHostError(res.Host, err)
			return report(env, "stado.service.adopt", res, err, res.Lines)
		}),
	}, true)
}

// ---------------------------------------------------------------- retire, remove

func newServiceRetireCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "retire",
		Usage: "stop a declared unit, remove it from its host and withdraw its declaration",
		UsageText: "stado service retire UNIT --host HOST [--reason TEXT] [--no-drain] [--dry-run] [--json]\n\n" +
			"UNIT is the declaration's name or unit. A unit no declaration covers is refused with not_found.\n" +
			"A product with a drain step (the Oarbank agent) is drained first; a failed drain is refused with drain_failed (exit 3).\n\n" +
			"example:\n   stado service retire legacy-api --host host2 --reason \"replaced by brama\"",
		Flags: append([]ucli.Flag{hostFlag("the target declaring it"), reasonFlag(), dryRunFlag("the drain step it would run, the unit it would remove and the declaration it would withdraw"), noDrainFlag()}, sshFlags()...),
		Action: writeAction(env, "UNIT", func(ctx context.Context, f *fleet.Fleet, c *ucli.Context, name string) error {
			res, err := f.Retire(ctx, withdrawOptions(c, name))
			return reportWithdraw(env, "stado.service.retire", res, err, true)
		}),
	}, true)
}

func newServiceRemoveCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "remove",
		Usage: "withdraw a declaration from the registry, leaving the host's unit untouched",
		UsageText: "stado service remove NAME --host HOST [--reason TEXT] [--no-drain] [--dry-run] [--json]\n\n" +
			"A declaration that is not there is refused with not_found (exit 3), also when remove is repeated.\n" +
			"Only a product with a drain step (the Oarbank agent) reaches its host: the step runs first, and a failed\n" +
			"drain is refused with drain_failed (exit 3).\n\n" +
			"example:\n   stado service remove legacy-api --host host2 --reason \"host rebuilt without it\"",
		// remove connects only to run a product's drain step
		Flags: append([]ucli.Flag{hostFlag("the target declaring it"), reasonFlag(), dryRunFlag("the drain step it would run and the declaration it would withdraw"), noDrainFlag()}, sshFlags()...),
		Action: writeAction(env, "NAME", func(ctx context.Context, f *fleet.Fleet, c *ucli.Context, name string) error {
			res, err := f.Remove(ctx, withdrawOptions(c, name))
			return reportWithdraw(env, "stado.service.remove", res, err, false)
		}),
	}, true)
}

func withdrawOptions(c *ucli.Context, name string) fleet.WithdrawOptions {
	return fleet.WithdrawOptions{Name: name, Host: c.String("host"), Reason: c.String("reason"), DryRun: c.Bool("dry-run"), NoDrain: c.Bool("no-drain")}
}

func reportWithdraw(env *Env, kind string, res fleet.WithdrawResult, err error, retired bool) error {
	if res.Service.Name == "" { // refused before a declaration was found
		return err
	}
	res.Error = fleet.DescribeHostError(res.Host, err)
	return report(env, kind, res, err, func() []string { return res.Lines(retired) })
}

// ---------------------------------------------------------------- converge

func newServiceConvergeCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "converge",
		Usage: "ensure a service on every target declaring it and retire the copies hosts run where it is no longer declared",
		UsageText: "stado service converge NAME [--dry-run] [--reason TEXT] [--stale-after DURATION] [--json]\n\n" +
			"Ensures NAME on each target whose declarations name it, then retires (drain first, as retire does)\n" +
			"the copies of its unit that fresh beacons show loaded on hosts declaring no NAME. The registry's\n" +
			"autonomy caps bound it: max_concurrent hosts at once, max_fraction of the service's hosts retired\n" +
			"per converge (the rest are skipped, code capped), failure_budget failures end it (not_attempted).\n" +
			"Nothing is retired unless every ensure succeeded. No declaration is written. --dry-run prints each\n" +
			"host's action (the ensures' plans come from the hosts), the skipped ones with their reason, and changes nothing.\n\n" +
			"example:\n   stado service converge brama --dry-run\n   stado service converge brama --reason \"host3 left the gateway pool\" --json",
		Flags: append([]ucli.Flag{reasonFlag(), dryRunFlag("each host's action, and what a cap skips and why,"), staleFlag(),
			&ucli.DurationFlag{Name: "wait", Value: 30 * time.Second, Usage: "bound on confirming an ensured unit runs"},
			&ucli.DurationFlag{Name: "settle", Value: time.Second, Usage: "how long a newly started process must keep its pid to count as running"},
		}, sshFlags()...),
		Action: writeAction(env, "NAME", func(ctx context.Context, f *fleet.Fleet, c *ucli.Context, name string) error {
			o := fleet.ConvergeOptions{Name: name, Reason: c.String("reason"), DryRun: c.Bool("dry-run"), Wait: c.Duration("wait"), Settle: c.Duration("settle")}
			if err := convergence.Evidence(ctx, f, reading(env, c.Duration("stale-after")), &o); err != nil {
				return err
			}
			res, err := f.Converge(ctx, o)
			if res.Rows == nil {
				return err
			}
			// every host's row, also when some failed: the error follows
			if perr := emit(env, "stado.service.converge", res, func(t *text) { t.lines(res.Lines()) }); err == nil {
				return perr
			}
			return err
		}),
	}, true)
}

// ---------------------------------------------------------------- restart

func newServiceRestartCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "restart",
		Usage: "restart a declared service through its init system on every host declaring it",
		UsageText: "stado service restart NAME [--host HOST...] [--dry-run] [--parallel N] [--json]\n\n" +
			"A failed state is cleared first. One result line per host as it completes; a host that cannot\n" +
			"be reached reports its stage and the others carry on.\n\n" +
			"example:\n   stado service restart brama --host host1 --host host3",
		Flags: append([]ucli.Flag{hostsFlag("only this target (repeatable; default every target declaring it)"), dryRunFlag("each host it would restart the unit on"), parallelFlag()}, sshFlags()...),
		Action: writeAction(env, "NAME", func(ctx context.Context, f *fleet.Fleet, c *ucli.Context, name string) error {
			o := fleet.RestartOptions{Name: name, Hosts: c.StringSlice("host"), DryRun: c.Bool("dry-run")}
			list, err := f.Restart(ctx, o, func(r fleet.RestartOutcome) { streamLines(env, r.Lines()) })
			if list == nil {
				return err
			}
			return report(env, "stado.service.restart", fanOutDoc{name, o.DryRun, list}, err, noLines)
		}),
	}, true)
}

// ---------------------------------------------------------------- logs, env

func newServiceLogsCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "logs",
		Usage: "read the last lines a declared service printed on its host",
		UsageText: "stado service logs NAME --host HOST [--lines N] [--json]\n\n" +
			"NAME is a declaration on HOST or a catalog product. For a loaded unit without a declaration\n" +
			"use stado service unit logs.\n\n" +
			"example:\n   stado service logs brama --host host2 --lines 50",
		Flags: append([]ucli.Flag{hostFlag("the target"), linesFlag()}, sshFlags()...),
		Action: writeAction(env, "NAME", func(ctx context.Context, f *fleet.Fleet, c *ucli.Context, name string) error {
			res, err := f.Logs(ctx, name, c.String("host"), c.Int("lines"))
			return reportLogs(env, "stado.service.logs", res, err)
		}),
	}, true)
}

func reportLogs(env *Env, kind string, res fleet.LogsResult, err error) error {
	if res.Error == nil && err != nil { // refused before any host
		return err
	}
	return report(env, kind, res, err, func() []string { return res.Lines })
}

func newServiceEnvCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "env",
		Usage: "print the environment a declared service's installed unit gives its program",
		UsageText: "stado service env NAME --host HOST [--show-values] [--json]\n\n" +
			"Values are masked unless --show-values is given.\n\n" +
			"example:\n   stado service env skarbiec --host host1",
		Flags: append([]ucli.Flag{hostFlag("the target"), showValuesFlag()}, sshFlags()...),
		Action: writeAction(env, "NAME", func(ctx context.Context, f *fleet.Fleet, c *ucli.Context, name string) error {
			res, err := f.Env(ctx, name, c.String("host"), c.Bool("show-values"))
			if res.Error == nil && err != nil {
				return err
			}
			return report(env, "stado.service.env", res, err, res.Lines)
		}),
	}, true)
}

// ---------------------------------------------------------------- unit show / logs

func newServiceUnitCommand(env *Env) *ucli.Command {
	return &ucli.Command{
		Name:  "unit",
		Usage: "inspect any loaded unit on a host, declared or not",
		Subcommands: []*ucli.Command{
			withShared(env, &ucli.Command{
				Name:  "show",
				Usage: "show a loaded unit's state on a host, with the failing verdict of a crash loop",
				UsageText: "stado service unit show UNIT --host HOST [--user] [--json]\n\n" +
					"A unit the host's init system does not hold is refused with not_found.\n\n" +
					"example:\n   stado service unit show ssh.service --host host1 --json",
				Flags: append([]ucli.Flag{hostFlag("the target"), userFlag()}, sshFlags()...),
				Action: writeAction(env, "UNIT", func(ctx context.Context, f *fleet.Fleet, c *ucli.Context, unit string) error {
					res, err := f.UnitShow(ctx, channel.UnitRef{Scope: scopeOf(c.Bool("user")), Unit: unit}, c.String("host"))
					if res.Error == nil && err != nil {
						return err
					}
					return report(env, "stado.service.unit.show", res, err, func() []string { return prefixed(res.Host+": ", fleet.VerdictLine(*res.Verdict)) })
				}),
			}, true),
			withShared(env, &ucli.Command{
				Name:  "logs",
				Usage: "read the last lines of any loaded unit on a host",
				UsageText: "stado service unit logs UNIT --host HOST [--lines N] [--user] [--json]\n\n" +
					"example:\n   stado service unit logs ssh.service --host host1 --lines 20",
				Flags: append([]ucli.Flag{hostFlag("the target"), linesFlag(), userFlag()}, sshFlags()...),
				Action: writeAction(env, "UNIT", func(ctx context.Context, f *fleet.Fleet, c *ucli.Context, unit string) error {
					res, err := f.UnitLogs(ctx, channel.UnitRef{Scope: scopeOf(c.Bool("user")), Unit: unit}, c.String("host"), c.Int("lines"))
					return reportLogs(env, "stado.service.unit.logs", res, err)
				}),
			}, true),
		},
	}
}

// prefixed puts prefix before the first line.
func prefixed(prefix string, lines []string) []string {
	if len(lines) > 0 {
		lines[0] = prefix + lines[0]
	}
	return lines
}
