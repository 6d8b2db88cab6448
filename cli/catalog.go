package cli

import (
	"context"
	"fmt"
	"os"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/store"
)

func newCatalogCommand(env *Env) *ucli.Command {
	return &ucli.Command{
		Name:  "catalog",
		Usage: "read and check the product catalog (shipped, plus the site catalog in the store)",
		Subcommands: []*ucli.Command{
			newCatalogShowCommand(env),
			newCatalogValidateCommand(env),
			newCatalogPushCommand(env),
		},
	}
}

type catalogShowOptions struct {
	// Name is a product name or unit identity; empty lists everything.
	Name string
	// Shipped skips the store and shows the embedded catalog only.
	Shipped bool
}

func newCatalogShowCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:      "show",
		Usage:     "list every product, or show one entry with its answering question and repair steps",
		ArgsUsage: "[NAME|UNIT]",
		UsageText: "stado catalog show [NAME|UNIT] [--shipped] [--json]\n\n" +
			"Without an argument, lists every product and the fixed recovery list. With a\n" +
			"product name, systemd unit or launchd label, shows that entry in full. The\n" +
			"site catalog in the store (key " + store.CatalogKey + ") is merged over the shipped one\n" +
			"unless --shipped is given.\n\n" +
			"example:\n   stado catalog show\n   stado catalog show com.wisent.stado --json",
		Flags: []ucli.Flag{
			&ucli.BoolFlag{Name: "shipped", Usage: "show the catalog built into this binary, without reading the store"},
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() > 1 {
				return usagef("catalog show takes at most one NAME or UNIT, got %d", c.NArg())
			}
			return runCatalogShow(c.Context, env, catalogShowOptions{Name: c.Args().First(), Shipped: c.Bool("shipped")})
		},
	}, true)
}

func runCatalogShow(ctx context.Context, env *Env, opts catalogShowOptions) error {
	var cat *catalog.Catalog // nil: the shipped catalog
	if !opts.Shipped {
		st, err := openStore(ctx, env)
		if err != nil {
			return err
		}
		defer st.Close()
		if cat, err = catalog.Load(ctx, st); err != nil {
			return err
		}
	}
	res, err := catalog.Show(cat, opts.Name)
	if err != nil {
		return err
	}
	return emit(env, "stado.catalog.show", res, func(t *text) {
		if header, rows := res.Table(); header != nil {
			t.table(header, rows)
		}
		t.lines(res.Lines())
	})
}

func newCatalogValidateCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:      "validate",
		Usage:     "check a site catalog document against the shipped catalog, reporting every violation",
		ArgsUsage: "FILE",
		UsageText: "stado catalog validate FILE [--json]\n\n" +
			"Reads FILE (YAML or JSON), checks it by the rules of the shipped catalog and\n" +
			"merges it over the shipped catalog. Exits 3 listing every violation with its\n" +
			"field path (products[2].answering.method: ...) when it breaks any rule.\n\n" +
			"example:\n   stado catalog validate site-catalog.yaml --json",
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return usagef("catalog validate takes one FILE, got %d arguments", c.NArg())
			}
			return runCatalogValidate(env, c.Args().First())
		},
	}, true)
}

func runCatalogValidate(env *Env, file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("read site catalog: %w", err)
	}
	merged, err := catalog.ValidateSite(data, file)
	if err != nil {
		return err
	}
	doc := catalog.Tally(file, merged)
	return emit(env, "stado.catalog.validate", doc, func(t *text) { t.lines(doc.Lines()) })
}

type catalogPushOptions struct {
	File   string
	Expect int64
	DryRun bool
}

func newCatalogPushCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "push",
		Usage: "validate a site catalog document and write it to the store with a compare-and-swap",
		UsageText: "stado catalog push FILE [--expect-revision N] [--dry-run] [--json]\n\n" +
			"The document extends the shipped catalog under the same rules; an invalid one is refused\n" +
			"with every violation and nothing is written.\n\n" +
			"example:\n   stado catalog push site-catalog.yaml --expect-revision 0",
		Flags: []ucli.Flag{
			&ucli.Int64Flag{Name: "expect-revision", Value: -1, Usage: "write only if the stored site catalog is at this revision (0: none yet)", DefaultText: "no revision check"},
			&ucli.BoolFlag{Name: "dry-run", Usage: "validate and print what would be written, write nothing"},
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return usagef("catalog push takes one FILE")
			}
			return runCatalogPush(c.Context, env, catalogPushOptions{File: c.Args().First(), Expect: c.Int64("expect-revision"), DryRun: c.Bool("dry-run")})
		},
	}, true)
}

func runCatalogPush(ctx context.Context, env *Env, o catalogPushOptions) error {
	data, err := os.ReadFile(o.File)
	if err != nil {
		return fmt.Errorf("read %s: %w", o.File, err)
	}
	var (
		site *catalog.Catalog
		rev  int64
		st   store.Store
	)
	if o.DryRun {
		site, err = catalog.ValidateSite(data, o.File)
	} else {
		if st, err = openStore(ctx, env); err != nil {
			return err
		}
		defer st.Close()
		site, rev, err = catalog.Push(ctx, st, data, o.File, o.Expect)
	}
	if err != nil {
		return err
	}
	res := catalog.PushedOf(o.File, o.DryRun, site, rev)
	return emit(env, "stado.catalog.push", res, func(t *text) { t.lines(res.Lines()) })
}
