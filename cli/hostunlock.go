package cli

import (
	"context"
	"fmt"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/safefile"
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

// unlockStoreDoc is the JSON form of host unlock-store.
type unlockStoreDoc struct {
	Store     string             `json:"store"`
	OlderThan string             `json:"older_than,omitempty"`
	Locks     []store.LockReport `json:"locks"`
	Removed   int                `json:"removed"`
	Kept      int                `json:"kept"`
	Note      string             `json:"note,omitempty"`
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
	doc := unlockStoreDoc{Store: etcdstore.Redact(env.StoreURL), Locks: []store.LockReport{}}
	if o.OlderThan > 0 {
		doc.OlderThan = o.OlderThan.String()
	}
	fs, ok := st.(*store.FileStore)
	if !ok {
		doc.Note = "this store keeps no lock files (only the file store does): nothing to clear"
	} else {
		doc.Locks, err = fs.ClearStaleLocks(o.Keys, o.OlderThan)
		if err != nil {
			return fmt.Errorf("unlock store: %w", err)
		}
	}
	var live []store.LockReport
	for _, l := range doc.Locks {
		switch {
		case l.Removed:
			doc.Removed++
		case l.State != safefile.LockFree:
			doc.Kept++
		}
		if l.State == safefile.LockLive && len(o.Keys) > 0 {
			live = append(live, l)
		}
	}
	if err := emit(env, "stado.host.unlock-store", doc, func(t *text) {
		if doc.Note != "" {
			t.f("%s\n", doc.Note)
		}
		for _, l := range doc.Locks {
			if l.State == safefile.LockFree && len(o.Keys) == 0 {
				continue // a free lock blocks nobody; --json lists it
			}
			name := l.Key
			if name == "" {
				name = l.File
			}
			t.f("%s: %s\n", name, l.Note)
		}
		t.f("removed %d stale lock(s), kept %d held one(s) in %s\n", doc.Removed, doc.Kept, doc.Store)
	}); err != nil {
		return err
	}
	if len(live) > 0 {
		l := live[0]
		return &refusal.Error{Code: refusal.Held, Details: live,
			Message: fmt.Sprintf("the lock of %s is live: %s", l.Key, l.Note),
			Hint:    "a running holder lets go by itself; stop that process if it hangs"}
	}
	return nil
}
