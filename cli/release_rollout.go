package cli

import (
	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/release/rollout"
)

func productFlag() ucli.Flag {
	return &ucli.StringFlag{Name: "product", Usage: "only this product"}
}

func newReleaseVersionShowCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "show",
		Usage: "show per host and product the declared version, the active and backup images and the last activation",
		UsageText: "stado release version show [--host H] [--product P] [--json]\n\n" +
			"Without --host, fleet-wide from the hosts' beacons (no SSH): a host whose beacon is not fresh, or\n" +
			"whose release state is unreadable, reads unknown with the reason. With --host, one channel call\n" +
			"reads the host's release state and whether each product's running pid runs the active image.\n\n" +
			"example:\n   stado release version show --product brama\n   stado release version show --host host1 --json",
		Flags: append([]ucli.Flag{hostFlag("read this target over its channel (default: every host, from beacons)"), productFlag()}, sshFlags()...),
		Action: func(c *ucli.Context) error {
			if c.NArg() > 0 {
				return usagef("release version show takes no arguments")
			}
			return runReleaseVersionShow(c, env, c.String("host"), c.String("product"))
		},
	}, true)
}

func runReleaseVersionShow(c *ucli.Context, env *Env, host, product string) error {
	ctx := c.Context
	st, err := openStore(ctx, env)
	if err != nil {
		return err
	}
	defer st.Close()
	var rows []rollout.Row
	if host == "" {
		v, err := beacon.LoadView(ctx, st, env.Now(), 0)
		if err != nil {
			return err
		}
		rows = rollout.ShowFleet(v, rollout.DeclarationsOf(v.Document), product)
	} else {
		doc, _, err := registry.Load(ctx, st)
		if err != nil {
			return err
		}
		conn, done := connectorFrom(c, env)
		defer done()
		if rows, err = rollout.ShowTarget(ctx, conn, doc, host, product); err != nil {
			return err
		}
	}
	doc := struct {
		Host     string        `json:"host,omitempty"`
		Releases []rollout.Row `json:"releases"`
	}{host, append([]rollout.Row{}, rows...)}
	return emit(env, "stado.release.version.show", doc, func(t *text) { t.table(rollout.Table(rows, env.Now())) })
}

func newReleaseVersionConvergeCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "converge",
		Usage: "bring hosts to the declared release versions, canary first, stopping at the first failure",
		UsageText: "stado release version converge (--host H | --all) [--product P] [--max-concurrent N] [--wait 60s] [--dry-run] [--json]\n\n" +
			"One channel call per host and product: the host installs the declared image, keeps the active one as\n" +
			"backup, restarts the product's unit and proves a fresh pid on the new image serving its directory\n" +
			"port, or restores the backup and refuses. The first host goes alone and must succeed; then at most\n" +
			"--max-concurrent hosts at once (the registry's autonomy cap is the ceiling); the first failure stops\n" +
			"the rest, recorded not_attempted. A host already on the declared image answers unchanged. Lines print\n" +
			"as they land; --json prints the whole report. Exit 3 with the host's refusal code when one refused.\n\n" +
			"example:\n   stado release version converge --all --product brama --max-concurrent 3\n   stado release version converge --host host1 --dry-run --json",
		Flags: append([]ucli.Flag{
			hostsFlag("converge this target (repeatable)"),
			&ucli.BoolFlag{Name: "all", Usage: "converge every target"},
			productFlag(),
			&ucli.IntFlag{Name: "max-concurrent", Usage: "hosts converging at once after the canary", DefaultText: "the registry's autonomy cap, else 1"},
			&ucli.DurationFlag{Name: "wait", Value: rollout.DefaultWait, Usage: "bound on each host's proof of the new image"},
			dryRunFlag("what each host would do"),
		}, sshFlags()...),
		Action: func(c *ucli.Context) error {
			hosts, all := c.StringSlice("host"), c.Bool("all")
			switch {
			case c.NArg() > 0:
				return usagef("release version converge takes no arguments")
			case len(hosts) == 0 && !all, len(hosts) > 0 && all:
				return usagef("release version converge needs --host H or --all (one of them)")
			}
			mode := channel.ModeApply
			if c.Bool("dry-run") {
				mode = channel.ModePlan
			}
			return runReleaseVersionConverge(c, env, rollout.Options{Targets: hosts, Product: c.String("product"),
				MaxConcurrent: c.Int("max-concurrent"), Wait: c.Duration("wait"), Mode: mode})
		},
	}, true)
}

func runReleaseVersionConverge(c *ucli.Context, env *Env, o rollout.Options) error {
	ctx := c.Context
	st, err := openStore(ctx, env)
	if err != nil {
		return err
	}
	defer st.Close()
	if o.Doc, _, err = registry.Load(ctx, st); err != nil {
		return err
	}
	o.Declared = rollout.DeclarationsOf(o.Doc)
	conn, done := connectorFrom(c, env)
	defer done()
	o.Connector = conn
	o.OnLine = func(l rollout.Line) { streamLines(env, []string{l.Text()}) }
	rep, err := rollout.Converge(ctx, o)
	return report(env, "stado.release.version.converge", rep, err, func() []string { return []string{rep.Summary()} })
}
