package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
	"github.com/wisent/stado/store/etcdstore"
)

func newStoreCommand(env *Env) *ucli.Command {
	return &ucli.Command{
		Name:        "store",
		Usage:       "manage the store itself: move stado's data between backends, pack an etcd store's values",
		Subcommands: []*ucli.Command{newStoreMigrateCommand(env), newStorePackingCommand(env)},
	}
}

// storeMigrateOptions are the flags of store migrate.
type storeMigrateOptions struct {
	From, To string
	Force    bool
}

func newStoreMigrateCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "migrate",
		Usage: "copy the registry (with its history), the site catalog, releases and autonomy outcomes to another store",
		UsageText: "stado store migrate --from URL --to URL [--force] [--json]\n\n" +
			"Copies every key under registry/, catalog/, releases/ and autonomy/.\n" +
			"Beacons are not copied: hosts publish them again within one pass.\n" +
			"The registry history is replayed in order, so revisions on the target\n" +
			"are the target's own; writer, time, reason and document are kept.\n" +
			"A target that already holds any of those keys is refused unless\n" +
			"--force, which deletes them first.\n\n" +
			"example:\n   stado store migrate --from file://$HOME/.stado/store --to etcd://127.0.0.1:2379/stado\n" +
			"   stado store migrate --from etcd://127.0.0.1:2379/stado --to file:///srv/stado --force --json",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "from", Usage: "source store URL"},
			&ucli.StringFlag{Name: "to", Usage: "target store URL"},
			&ucli.BoolFlag{Name: "force", Usage: "replace what the target holds under the copied prefixes"},
		},
		Action: func(c *ucli.Context) error {
			if c.Args().Len() != 0 {
				return usagef("store migrate takes no arguments, got %q", c.Args().Slice())
			}
			return runStoreMigrate(c.Context, env, storeMigrateOptions{From: c.String("from"), To: c.String("to"), Force: c.Bool("force")})
		},
	}, true)
}

func runStoreMigrate(ctx context.Context, env *Env, opts storeMigrateOptions) error {
	switch {
	case opts.From == "" || opts.To == "":
		return usagef("store migrate needs --from URL and --to URL")
	case opts.From == opts.To:
		return usagef("store migrate: --from and --to name the same store")
	}
	from, err := env.OpenStore(ctx, opts.From)
	if err != nil {
		return fmt.Errorf("open source store %s: %w", etcdstore.Redact(opts.From), err)
	}
	defer from.Close()
	to, err := env.OpenStore(ctx, opts.To)
	if err != nil {
		return fmt.Errorf("open target store %s: %w", etcdstore.Redact(opts.To), err)
	}
	defer to.Close()
	m, err := store.Migrate(ctx, from, to, opts.Force)
	if err != nil {
		return err
	}
	res := store.Migrated{From: etcdstore.Redact(opts.From), To: etcdstore.Redact(opts.To), Migration: m}
	return emit(env, "stado.store.migrate", res, func(t *text) { t.lines(res.Lines()) })
}

func newStorePackingCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "packing",
		Usage: "show, or turn on or off, the packing of an etcd store's beacon-sized values",
		UsageText: "stado store packing [--on [--force] | --off] [--json]\n\n" +
			"Packed, a beacon takes about a third of its bytes in etcd, and a\n" +
			"fleet-wide listing moves a third as much. A stado older than the\n" +
			"first that reads packed values fails on them, so packing is off until\n" +
			"this command turns it on. Without a flag it shows the state and every\n" +
			"host whose beacon does not say its stado reads packed values. --on\n" +
			"is refused while there is such a host, unless --force (only when no\n" +
			"older stado reads the store: workstations and Desktop servers too).\n" +
			"Writers take the change within five minutes.\n\n" +
			"example:\n   stado store packing --store etcd://127.0.0.1:2379/stado\n" +
			"   stado store packing --on --json",
		Flags: []ucli.Flag{
			&ucli.BoolFlag{Name: "on", Usage: "pack values from now on"},
			&ucli.BoolFlag{Name: "off", Usage: "store values as written from now on (packed ones stay readable)"},
			&ucli.BoolFlag{Name: "force", Usage: "turn packing on although some hosts' beacons do not say they read it"},
		},
		Action: func(c *ucli.Context) error {
			var want *bool
			switch on, off := c.Bool("on"), c.Bool("off"); {
			case c.Args().Len() != 0:
				return usagef("store packing takes no arguments, got %q", c.Args().Slice())
			case on && off:
				return usagef("store packing: --on and --off together")
			case c.Bool("force") && !on:
				return usagef("store packing: --force goes with --on")
			case on || off:
				want = &on
			}
			st, err := openStore(c.Context, env)
			if err != nil {
				return err
			}
			defer st.Close()
			res, err := beacon.SetPacking(c.Context, st, want, c.Bool("force"), registry.Writer(), time.Now())
			if errors.Is(err, beacon.ErrCannotPack) {
				return usagef("store packing: %v", err)
			}
			if err != nil {
				return err
			}
			return emit(env, "stado.store.packing", res, func(t *text) { t.lines(res.Lines()) })
		},
	}, true)
}
