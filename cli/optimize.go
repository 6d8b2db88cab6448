package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/autonomy"
	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/fleet"
	"github.com/wisent/stado/printer"
	"github.com/wisent/stado/registry"
)

// The autonomy cycle: optimize run plans (and, authorized, enforces) from
// beacons and a sweep of the hosts; optimize status reads what it recorded.
func newOptimizeCommand(env *Env) *ucli.Command {
	return &ucli.Command{
		Name:  "optimize",
		Usage: "the autonomy cycle: plan every declared service from beacons and a sweep of the hosts, and, authorized, repair",
		Subcommands: []*ucli.Command{
			newOptimizeRunCommand(env),
			newOptimizeStatusCommand(env),
		},
	}
}

// optimizeRunOptions are the flags of optimize run.
type optimizeRunOptions struct {
	autonomy.Options
	Every time.Duration
}

func newOptimizeRunCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "run",
		Usage: "run the autonomy cycle: report plans and changes nothing; enforce repairs within its caps",
		UsageText: "stado optimize run [--mode report|enforce] [--every DURATION] [--max-concurrent N] [--max-fraction F]\n" +
			"                   [--failure-budget K] [--lease-ttl DURATION] [--settle DURATION] [--json]\n\n" +
			"Joins the latest beacons with a sweep of one call per host over kept connections (the keeper's,\n" +
			"unless --no-keeper; --every keeps its own across cycles) and plans every declared service: restore\n" +
			"(the unit file is absent), reinstall (its bytes drifted), start (inactive or failed), restart\n" +
			"(failing, not a crash loop) or none. A host whose fresh beacon says each unit's state and drift\n" +
			"(its host process compares the unit files) is asked only whether it is reachable; any other host\n" +
			"is verified in full. An incomplete declaration, an unreachable host, missing or conflicting\n" +
			"evidence, a crash loop and a recovery-list unit are recorded refusals. The cycle is recorded in\n" +
			"the store (stado optimize status) and refusals are alerted on the targets' webhooks; a command\n" +
			"alert runs only on its own host (stado host run), never here.\n\n" +
			"report (the default) changes nothing on any host or in the registry and exits 0.\n" +
			"enforce needs autonomy.mode: enforce in the registry as well as this flag, takes the store's\n" +
			"enforcer lease (a second enforcer is refused, naming the holder), acts through the write half\n" +
			"within its caps, and re-verifies every unit it touched. The registry's autonomy caps are the\n" +
			"ceiling: the flags may ask for less, never more. Defaults: one host at a time, a quarter of a\n" +
			"service's hosts, the first failed action ends the cycle.\n\n" +
			"example:\n   stado optimize run --json\n   stado optimize run --mode enforce --max-concurrent 3 --failure-budget 2",
		Flags: append([]ucli.Flag{
			&ucli.StringFlag{Name: "mode", Value: registry.AutonomyReport, Usage: "report or enforce"},
			&ucli.DurationFlag{Name: "every", Usage: "run a cycle every DURATION until stopped", DefaultText: "one cycle"},
			&ucli.IntFlag{Name: "max-concurrent", Usage: "hosts acted on at once (enforce)", DefaultText: "the registry's, else 1"},
			&ucli.Float64Flag{Name: "max-fraction", Usage: "share of one service's hosts acted on at once (enforce)", DefaultText: "the registry's, else 0.25"},
			&ucli.IntFlag{Name: "failure-budget", Usage: "failed actions that stop the cycle (enforce)", DefaultText: "the registry's, else 1"},
			&ucli.DurationFlag{Name: "lease-ttl", Value: autonomy.DefaultLeaseTTL, Usage: "how long the enforcer lease outlives its holder's last renewal"},
			&ucli.DurationFlag{Name: "settle", Value: time.Second, Usage: "how long a started process must keep its pid (enforce)"},
			&ucli.DurationFlag{Name: "wait", Value: 30 * time.Second, Usage: "bound on confirming a started unit runs (enforce)"},
			staleFlag(),
		}, sshFlags()...),
		Action: func(c *ucli.Context) error {
			if c.NArg() > 0 {
				return usagef("optimize run takes no arguments")
			}
			o := optimizeRunOptions{Every: c.Duration("every"), Options: autonomy.Options{
				Mode:       c.String("mode"),
				Requested:  autonomy.Requested{MaxConcurrent: c.Int("max-concurrent"), MaxFraction: c.Float64("max-fraction"), FailureBudget: c.Int("failure-budget")},
				LeaseTTL:   c.Duration("lease-ttl"),
				Settle:     c.Duration("settle"),
				Wait:       c.Duration("wait"),
				StaleAfter: c.Duration("stale-after"),
			}}
			if o.Every < 0 {
				return usagef("--every must be positive")
			}
			return runOptimize(c.Context, env, o, func() (fleet.Connector, func()) { return connectorFrom(c, env) })
		},
	}, true)
}

// runOptimize runs one cycle, or one every o.Every until ctx ends; a
// repeating run opens its host connections once (connect) and keeps them
// across its cycles.
func runOptimize(ctx context.Context, env *Env, o optimizeRunOptions, connect func() (fleet.Connector, func())) error {
	st, err := openStore(ctx, env)
	if err != nil {
		return err
	}
	defer st.Close()
	r := &autonomy.Runner{Store: st, Connect: connect, Now: env.Now, Cache: beacon.UserRegistryCache(env.Getenv, env.StoreURL)}
	if o.Every == 0 {
		c, err := r.Run(ctx, o.Options)
		if c == nil {
			return err
		}
		if perr := emit(env, autonomy.CycleKind, c, func(t *text) { printCycle(t, c) }); perr != nil {
			return perr
		}
		if err != nil {
			return err
		}
		return c.Outcome()
	}
	// each cycle printed as it ends; what kept one from running, logged
	r.Every(ctx, o.Options, o.Every, func(c *autonomy.Cycle, err error) {
		switch {
		case c != nil:
			printStreamed(env, c)
		case ctx.Err() == nil:
			env.Logger.Warn("autonomy cycle not run", "mode", o.Mode, "err", err)
		}
		if err == nil && c != nil {
			if oerr := c.Outcome(); oerr != nil {
				env.Logger.Warn("autonomy cycle", "err", oerr)
			}
		} else if err != nil && c != nil {
			env.Logger.Warn("autonomy cycle", "err", err)
		}
	})
	return nil
}

// printStreamed prints one cycle of a repeating run: one JSON line under
// --json, else its text.
func printStreamed(env *Env, c *autonomy.Cycle) {
	if env.JSON {
		b, err := printer.WithKind(autonomy.CycleKind, c)
		if err == nil {
			var line []byte
			if line, err = compact(b); err == nil {
				fmt.Fprintf(env.Stdout, "%s\n", line)
			}
		}
		return
	}
	t := newText(env.Stdout, terminalWidth(env))
	printCycle(t, c)
}

func compact(b []byte) ([]byte, error) {
	var v json.RawMessage = b
	return json.Marshal(v)
}

func printCycle(t *text, c *autonomy.Cycle) {
	t.lines(c.Lines())
	if len(c.Rows) > 0 {
		t.table(c.Table())
	}
}

// ---------------------------------------------------------------- status

func newOptimizeStatusCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "status",
		Usage: "show the latest autonomy cycle from the store: its plan rows with evidence, actions, results and refusals (no SSH)",
		UsageText: "stado optimize status [--history N] [--json]\n\n" +
			"Reads the latest recorded cycle and the enforcer lease's holder. With --history N it also lists\n" +
			"the N newest cycles, one line each. It says what the cycle recorded, not that a program was fixed.\n\n" +
			"example:\n   stado optimize status --history 5 --json",
		Flags: []ucli.Flag{
			&ucli.IntFlag{Name: "history", Usage: "also list the N newest cycles"},
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() > 0 {
				return usagef("optimize status takes no arguments")
			}
			if c.Int("history") < 0 {
				return usagef("--history must be positive")
			}
			return runOptimizeStatus(c.Context, env, c.Int("history"))
		},
	}, true)
}

func runOptimizeStatus(ctx context.Context, env *Env, history int) error {
	st, err := openStore(ctx, env)
	if err != nil {
		return err
	}
	defer st.Close()
	doc, err := autonomy.ReadStatus(ctx, st, history)
	if err != nil {
		return err
	}
	return emit(env, "stado.autonomy.status", doc, func(t *text) {
		if doc.Lease != nil {
			t.f("enforcer lease held by %s\n", doc.Lease)
		} else {
			t.f("no enforcer holds the lease\n")
		}
		if doc.Latest == nil {
			t.f("no autonomy cycle recorded yet; run stado optimize run\n")
			return
		}
		printCycle(t, doc.Latest)
		if len(doc.History) > 0 {
			t.f("\n")
			t.table(autonomy.HistoryTable(doc.History))
		}
	})
}
