package cli

import (
	"context"
	"errors"
	"fmt"
	"os"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/registry"
)

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
			&ucli.Int64Flag{Name: "expect-revision", Value: -1, Usage: "write only if the stored site catalog is at this revision (0: none yet)"},
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
	site, err := catalog.ValidateSite(data, o.File)
	if err != nil {
		return err
	}
	if _, err := catalog.Shipped().Extend(site); err != nil {
		return err
	}
	st, err := openStore(ctx, env)
	if err != nil {
		return err
	}
	defer st.Close()
	expect := o.Expect
	if expect < 0 {
		cur, err := st.Get(ctx, registry.CatalogKey)
		switch {
		case errors.Is(err, registry.ErrNotFound):
			expect = 0
		case err != nil:
			return fmt.Errorf("read site catalog: %w", err)
		default:
			expect = cur.Revision
		}
	}
	rev := int64(0)
	if !o.DryRun {
		rev, err = st.CompareAndSwap(ctx, registry.CatalogKey, data, expect, registry.PutOptions{})
		if err != nil {
			return fmt.Errorf("write site catalog: %w", err)
		}
	}
	if env.JSON {
		return printJSON(env, map[string]any{"kind": "stado.catalog.push", "file": o.File, "dry_run": o.DryRun, "revision": rev, "products": len(site.Products()), "steps": len(site.Steps())})
	}
	if o.DryRun {
		_, err = fmt.Fprintf(env.Stdout, "%s is valid: %d product(s), %d step(s); nothing written (dry run)\n", o.File, len(site.Products()), len(site.Steps()))
		return err
	}
	_, err = fmt.Fprintf(env.Stdout, "site catalog at revision %d: %d product(s), %d step(s)\n", rev, len(site.Products()), len(site.Steps()))
	return err
}
