package cli

import (
	"context"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/store"
	"github.com/wisent/stado/store/etcdstore"
)

// hostUnlockOptions are the flags of host unlock-store.
type hostUnlockOptions struct {
	Stale     bool
	OlderThan time.Duration
	Keys      []string
}

func newHostUnlockStoreCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "unlock-store",
		Usage: "remove the store's lock files whose recorded holder no longer runs (the object-api repair step)",
		UsageText: "stado host unlock-store --stale [--older-than 60s] [--key KEY]... [--json]\n\n" +
			"Every writer of the file store records itself (pid, process start, host, since) in the key's lock\n" +
			"file while it holds it. A lock still held after that holder is gone (a child that inherited the\n" +
			"open file outlived it) blocks every reader and writer of the key forever: --stale removes such\n" +
			"files. A lock whose holder runs, names another host, or records nobody is kept and reported.\n" +
			"With --key, only those keys' locks are judged, and a live one is refused naming its holder.\n" +
			"The store is --store, else STADO_STORE, else $HOME/.stado/store-url, as for every command.\n\n" +
			"example:\n   stado host unlock-store --stale --older-than 60s --json",
		Flags: []ucli.Flag{
			&ucli.BoolFlag{Name: "stale", Usage: "remove locks whose recorded holder is gone (required: nothing else is ever removed)"},
			&ucli.DurationFlag{Name: "older-than", Usage: "only remove a stale lock its holder took at least this long ago"},
			&ucli.StringSliceFlag{Name: "key", Usage: "judge only this key's lock (repeatable)"},
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() > 0 {
				return usagef("host unlock-store takes no arguments (got %q); name keys with --key", c.Args().First())
			}
			return runHostUnlockStore(c.Context, env, hostUnlockOptions{
				Stale: c.Bool("stale"), OlderThan: c.Duration("older-than"), Keys: c.StringSlice("key"),
			})
		},
	}, true)
}

func runHostUnlockStore(ctx context.Context, env *Env, o hostUnlockOptions) error {
	if !o.Stale {
		return usagef("host unlock-store removes only locks whose holder is gone: say --stale")
	}
	if o.OlderThan < 0 {
		return usagef("--older-than must not be negative")
	}
	for _, k := range o.Keys {
		if err := store.ValidateKey(k); err != nil {
			return usagef("--key %q: %v", k, err)
		}
	}
	st, err := openStore(ctx, env)
	if err != nil {
		return err
	}
	defer st.Close()
	u, err := store.UnlockStale(st, o.Keys, o.OlderThan)
	if err != nil {
		return err
	}
	u.Store = etcdstore.Redact(env.StoreURL)
	if err := emit(env, "stado.host.unlock-store", u, func(t *text) { t.lines(u.Lines()) }); err != nil {
		return err
	}
	return u.Held()
}
