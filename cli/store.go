package cli

import (
	"context"
	"fmt"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/store"
	"github.com/wisent/stado/store/etcdstore"
)

func newStoreCommand(env *Env) *ucli.Command {
	return &ucli.Command{
		Name:        "store",
		Usage:       "manage the store itself: move stado's data between backends",
		Subcommands: []*ucli.Command{newStoreMigrateCommand(env)},
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
