package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/registry/etcdstore"
)

func newStoreCommand(env *Env) *ucli.Command {
	return &ucli.Command{
		Name:  "store",
		Usage: "manage the store itself: move stado's data between backends",
		Subcommands: []*ucli.Command{
			newStoreMigrateCommand(env),
		},
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
			opts := storeMigrateOptions{From: c.String("from"), To: c.String("to"), Force: c.Bool("force")}
			return runStoreMigrate(c.Context, env, opts)
		},
	}, true)
}

// migratedPrefixes are the parts of the store migrate copies. Beacons are
// live data each host rewrites every pass (on etcd with a lease the copy
// could not carry), so they are left out.
var migratedPrefixes = []string{"registry/", "catalog/", "releases/", "autonomy/"}

// storeMigrateResult is what store migrate reports (kind stado.store.migrate).
type storeMigrateResult struct {
	Kind string `json:"kind"`
	From string `json:"from"`
	To   string `json:"to"`
	// Copied counts keys written to the target by part.
	Copied migrateCounts `json:"copied"`
	// Replaced counts target keys --force deleted first.
	Replaced int `json:"replaced"`
	// RegistryRevision maps the source's current registry revision to the
	// target's; both 0 when the source holds no registry.
	RegistryRevision struct {
		From int64 `json:"from"`
		To   int64 `json:"to"`
	} `json:"registry_revision"`
	// NotCopied names what migrate leaves behind on purpose.
	NotCopied []string `json:"not_copied"`
}

type migrateCounts struct {
	Registry      int `json:"registry"`
	History       int `json:"history"`
	RegistryOther int `json:"registry_other"`
	Catalog       int `json:"catalog"`
	Releases      int `json:"releases"`
	Autonomy      int `json:"autonomy"`
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
	res, err := migrateStore(ctx, from, to, opts.Force)
	if err != nil {
		return err
	}
	res.From, res.To = etcdstore.Redact(opts.From), etcdstore.Redact(opts.To)
	if env.JSON {
		return printJSON(env, res)
	}
	c := res.Copied
	fmt.Fprintf(env.Stdout, "migrated %s -> %s\n", res.From, res.To)
	fmt.Fprintf(env.Stdout, "  registry: %d document (revision %d -> %d), %d history entries, %d other keys\n",
		c.Registry, res.RegistryRevision.From, res.RegistryRevision.To, c.History, c.RegistryOther)
	fmt.Fprintf(env.Stdout, "  catalog: %d, releases: %d, autonomy: %d\n", c.Catalog, c.Releases, c.Autonomy)
	if res.Replaced > 0 {
		fmt.Fprintf(env.Stdout, "  replaced %d keys the target held (--force)\n", res.Replaced)
	}
	_, err = fmt.Fprintf(env.Stdout, "  not copied: %s\n", strings.Join(res.NotCopied, ", "))
	return err
}

// historyEnvelope is a stored registry revision with its document kept as
// the bytes it was written with.
type historyEnvelope struct {
	Meta     registry.Meta   `json:"meta"`
	Document json.RawMessage `json:"document"`
}

// encodeRegistryEnvelope renders the stored form of a registry revision,
// as registry.Push writes it.
func encodeRegistryEnvelope(m registry.Meta, doc []byte) ([]byte, error) {
	mj, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(`{"meta":`)
	b.Write(mj)
	b.WriteString(`,"document":`)
	b.Write(doc)
	b.WriteString("}\n")
	return b.Bytes(), nil
}

// migrateStore copies the migrated prefixes of from into to. Everything is
// read (and the history decoded) before the first write, so an unreadable
// source writes nothing. The registry is replayed revision by revision:
// each history entry becomes a compare-and-swap of the registry document
// and a history entry under the revision the target gave it.
func migrateStore(ctx context.Context, from, to registry.Store, force bool) (storeMigrateResult, error) {
	res := storeMigrateResult{Kind: "stado.store.migrate", NotCopied: []string{registry.BeaconPrefix + " (hosts publish them again)"}}
	source := map[string][]registry.Object{}
	for _, p := range migratedPrefixes {
		objs, err := from.List(ctx, p)
		if err != nil {
			return res, fmt.Errorf("read source store: %w", err)
		}
		source[p] = objs
	}
	var (
		history []historyEnvelope
		current *registry.Object
		plain   []registry.Object
	)
	for _, obj := range source["registry/"] {
		switch {
		case obj.Key == registry.RegistryKey:
			current = &obj
		case strings.HasPrefix(obj.Key, registry.RegistryHistoryPrefix):
			var env historyEnvelope
			if err := json.Unmarshal(obj.Value, &env); err != nil || len(env.Document) == 0 {
				return res, fmt.Errorf("read source store: history entry %s is not a registry envelope: %v", obj.Key, err)
			}
			if env.Meta.Revision == 0 {
				env.Meta.Revision = obj.Revision
			}
			history = append(history, env)
		default:
			plain = append(plain, obj)
			res.Copied.RegistryOther++
		}
	}
	sort.SliceStable(history, func(i, j int) bool { return history[i].Meta.Revision < history[j].Meta.Revision })
	if current != nil {
		res.RegistryRevision.From = current.Revision
		if len(history) == 0 || history[len(history)-1].Meta.Revision != current.Revision {
			// The current revision's history entry was never written (its
			// writer died in between): replay it from the document itself.
			var env historyEnvelope
			if err := json.Unmarshal(current.Value, &env); err != nil || len(env.Document) == 0 {
				return res, fmt.Errorf("read source store: %s is not a registry envelope: %v", current.Key, err)
			}
			env.Meta.Revision = current.Revision
			history = append(history, env)
		}
	}
	for _, p := range migratedPrefixes[1:] {
		plain = append(plain, source[p]...)
		switch p {
		case "catalog/":
			res.Copied.Catalog = len(source[p])
		case "releases/":
			res.Copied.Releases = len(source[p])
		case "autonomy/":
			res.Copied.Autonomy = len(source[p])
		}
	}

	var held []string
	for _, p := range migratedPrefixes {
		objs, err := to.List(ctx, p)
		if err != nil {
			return res, fmt.Errorf("read target store: %w", err)
		}
		for _, o := range objs {
			held = append(held, o.Key)
		}
	}
	if len(held) > 0 && !force {
		ref := refuse("target_not_empty", "target store already holds %d keys under %s", len(held), strings.Join(migratedPrefixes, ", "))
		ref.Hint = "pass --force to delete them and copy the source in their place"
		ref.Details = map[string]any{"keys": len(held), "first": held[:min(len(held), 10)]}
		return res, ref
	}
	for _, k := range held {
		if err := to.Delete(ctx, k); err != nil && !errors.Is(err, registry.ErrNotFound) {
			return res, fmt.Errorf("clear target store (deleted %d of %d keys): %w", res.Replaced, len(held), err)
		}
		res.Replaced++
	}

	written := 0
	// A failed write leaves the target partly written; the message says so
	// and the cause keeps its exit code (conflict, I/O failure).
	partial := func(err error) error {
		return fmt.Errorf("migrate stopped after %d of %d writes; run it again with --force once the cause is fixed: %w",
			written, len(plain)+2*len(history), err)
	}
	var rev int64
	for _, h := range history {
		m := h.Meta
		m.Revision = 0
		value, err := encodeRegistryEnvelope(m, h.Document)
		if err != nil {
			return res, partial(err)
		}
		if rev, err = to.CompareAndSwap(ctx, registry.RegistryKey, value, rev, registry.PutOptions{}); err != nil {
			return res, partial(err)
		}
		written++
		m.Revision = rev
		entry, err := encodeRegistryEnvelope(m, h.Document)
		if err == nil {
			_, err = to.Put(ctx, registry.HistoryKey(rev), entry, registry.PutOptions{})
		}
		if err != nil {
			return res, partial(err)
		}
		written++
		res.Copied.History++
	}
	if len(history) > 0 {
		res.Copied.Registry = 1
		res.RegistryRevision.To = rev
	}
	for _, o := range plain {
		if _, err := to.Put(ctx, o.Key, o.Value, registry.PutOptions{}); err != nil {
			return res, partial(err)
		}
		written++
	}
	return res, nil
}
