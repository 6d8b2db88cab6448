package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

func newRegistryCommand(env *Env) *ucli.Command {
	return &ucli.Command{
		Name:  "registry",
		Usage: "read, check and write the registry document (compare-and-swap, with history)",
		Subcommands: []*ucli.Command{
			newRegistryPushCommand(env),
			newRegistryPullCommand(env),
			newRegistryShowCommand(env),
			newRegistryHistoryCommand(env),
			newRegistryValidateCommand(env),
			newRegistryDoctorCommand(env),
		},
	}
}

// revisionFlag reads a revision number flag; ok says whether it was given.
func revisionFlag(c *ucli.Context, name string) (rev int64, ok bool, err error) {
	if !c.IsSet(name) {
		return 0, false, nil
	}
	if rev = c.Int64(name); rev < 0 {
		return 0, false, usagef("--%s wants a revision number, got %d", name, rev)
	}
	return rev, true, nil
}

// readDocumentFile parses and validates the document in file ("-" reads
// stdin). Parse and validation failures unwrap to registry.ErrInvalid and
// name the file.
func readDocumentFile(env *Env, file string) (*registry.Document, error) {
	var data []byte
	var err error
	if file == "-" {
		data, err = io.ReadAll(env.Stdin)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, fmt.Errorf("read registry document: %w", err)
	}
	return registry.ReadDocument(data, file)
}

// --- push ---

type registryPushOptions struct {
	File   string
	Expect int64 // -1: the revision read just before writing
	Reason string
	DryRun bool
}

func newRegistryPushCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:      "push",
		Usage:     "validate a document and write it as the next registry revision",
		ArgsUsage: "FILE",
		UsageText: "stado registry push FILE [--expect-revision N] [--reason TEXT] [--dry-run] [--json]\n\n" +
			"Validates FILE (YAML or JSON; - reads stdin) and writes it with a compare-and-swap.\n" +
			"With --expect-revision the store must hold revision N (0: no registry yet);\n" +
			"without it, the revision read just before writing. An invalid document is\n" +
			"refused with every violation (exit 3) and nothing is written; a revision\n" +
			"conflict is refused with code conflict (exit 3).\n\n" +
			"example:\n   stado registry push examples/fleet.yaml --reason \"add host3\"\n" +
			"   stado registry push fleet.yaml --expect-revision 4 --json",
		Flags: []ucli.Flag{
			&ucli.Int64Flag{Name: "expect-revision", Usage: "write only if the store holds revision `N` (0: none yet)", DefaultText: "no revision check"},
			&ucli.StringFlag{Name: "reason", Usage: "why this change is made, kept in the history"},
			&ucli.BoolFlag{Name: "dry-run", Usage: "validate and show the change without writing"},
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return usagef("registry push takes one FILE, got %d argument(s)", c.NArg())
			}
			expect, given, err := revisionFlag(c, "expect-revision")
			if err != nil {
				return err
			} else if !given {
				expect = -1
			}
			return runRegistryPush(c.Context, env, registryPushOptions{File: c.Args().First(), Expect: expect, Reason: c.String("reason"), DryRun: c.Bool("dry-run")})
		},
	}, true)
}

func runRegistryPush(ctx context.Context, env *Env, opts registryPushOptions) error {
	d, err := readDocumentFile(env, opts.File)
	if err != nil {
		return err
	}
	st, err := openStore(ctx, env)
	if err != nil {
		return err
	}
	defer st.Close()
	res, err := registry.PushChange(ctx, st, d, opts.Expect, opts.Reason, opts.DryRun)
	var ce *store.ConflictError
	if errors.As(err, &ce) {
		return registry.ConflictRefusal(ce)
	} else if err != nil && res.Meta == nil {
		return err
	}
	if perr := emit(env, "stado.registry.push", res, func(t *text) { t.lines(res.Lines()) }); perr != nil {
		return perr
	}
	return err // written, but its history entry was not
}

// --- pull ---

func newRegistryPullCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "pull",
		Usage: "print the registry document (current or a retained revision)",
		UsageText: "stado registry pull [--revision N] [--format yaml|json] [--json]\n\n" +
			"Prints the document itself, ready to edit and push back. --json instead\n" +
			"prints one JSON document with the revision, its meta and the document.\n\n" +
			"example:\n   stado registry pull > fleet.yaml\n   stado registry pull --revision 3 --format json",
		Flags: []ucli.Flag{
			&ucli.Int64Flag{Name: "revision", Usage: "a retained revision `N` instead of the current one"},
			&ucli.StringFlag{Name: "format", Value: registry.FormatYAML, Usage: "yaml or json"},
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() != 0 {
				return usagef("registry pull takes no arguments, got %q", c.Args().Slice())
			}
			format := c.String("format")
			if format != registry.FormatYAML && format != registry.FormatJSON {
				return usagef("--format wants yaml or json, got %q", format)
			}
			rev, _, err := revisionFlag(c, "revision")
			if err != nil {
				return err
			}
			return runRegistryPull(c.Context, env, rev, format)
		},
	}, true)
}

type registryPullResult struct {
	Revision int64              `json:"revision"`
	Meta     store.Meta         `json:"meta"`
	Document *registry.Document `json:"document"`
}

// loadAt loads the current registry (rev 0) or revision rev
// (registry.LoadAt) from the store the globals name.
func loadAt(ctx context.Context, env *Env, rev int64) (*registry.Document, store.Meta, error) {
	st, err := openStore(ctx, env)
	if err != nil {
		return nil, store.Meta{}, err
	}
	defer st.Close()
	return registry.LoadAt(ctx, st, rev)
}

func runRegistryPull(ctx context.Context, env *Env, rev int64, format string) error {
	d, m, err := loadAt(ctx, env, rev)
	if err != nil {
		return err
	}
	out, err := registry.Marshal(d, format)
	if err != nil {
		return err
	}
	// The text form is the document itself, in the format asked for.
	return emit(env, "stado.registry.pull", registryPullResult{Revision: m.Revision, Meta: m, Document: d}, func(t *text) { t.Write(out) })
}

// --- show ---

func newRegistryShowCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "show",
		Usage: "summarise the current registry: revision, writer, targets and services",
		UsageText: "stado registry show [--json]\n\n" +
			"Services whose declaration has no program are flagged declaration_incomplete:\n" +
			"they cannot be reinstalled from the document.\n\n" +
			"example:\n   stado registry show\n   stado registry show --json",
		Action: func(c *ucli.Context) error {
			if c.NArg() != 0 {
				return usagef("registry show takes no arguments, got %q", c.Args().Slice())
			}
			return runRegistryShow(c.Context, env)
		},
	}, true)
}

func runRegistryShow(ctx context.Context, env *Env) error {
	d, m, err := loadAt(ctx, env, 0)
	if err != nil {
		return err
	}
	res := registry.Show(d, m)
	return emit(env, "stado.registry.show", res, func(t *text) { t.lines(res.Lines()) })
}

// --- history ---

func newRegistryHistoryCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "history",
		Usage: "list the retained registry revisions, newest first",
		UsageText: "stado registry history [--json]\n\n" +
			"Each revision with its writer, time and reason; read one with\n" +
			"stado registry pull --revision N.\n\n" +
			"example:\n   stado registry history\n   stado registry history --json",
		Action: func(c *ucli.Context) error {
			if c.NArg() != 0 {
				return usagef("registry history takes no arguments, got %q", c.Args().Slice())
			}
			return runRegistryHistory(c.Context, env)
		},
	}, true)
}

func runRegistryHistory(ctx context.Context, env *Env) error {
	st, err := openStore(ctx, env)
	if err != nil {
		return err
	}
	defer st.Close()
	h, err := registry.History(ctx, st)
	if err != nil {
		return err
	}
	res := registry.NewestFirst(h)
	return emit(env, "stado.registry.history", res, func(t *text) {
		if len(h) == 0 {
			t.f("no registry revisions yet\n")
			return
		}
		t.table(res.Table())
	})
}

// --- validate ---

func newRegistryValidateCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:      "validate",
		Usage:     "check a registry document without writing it",
		ArgsUsage: "FILE",
		UsageText: "stado registry validate FILE [--json]\n\n" +
			"Reports every violation with its field path (exit 3), or a summary of a\n" +
			"valid document with its warnings (a declaration overriding a product setting\n" +
			"the shipped catalog marks safety-relevant: product_setting_overridden, exit 0).\n" +
			"Reads no store. - reads stdin.\n\n" +
			"example:\n   stado registry validate examples/fleet.yaml",
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return usagef("registry validate takes one FILE, got %d argument(s)", c.NArg())
			}
			return runRegistryValidate(env, c.Args().First())
		},
	}, true)
}

func runRegistryValidate(env *Env, file string) error {
	d, err := readDocumentFile(env, file)
	if err != nil {
		return err
	}
	res := catalog.Shipped().Validated(file, d)
	return emit(env, "stado.registry.validate", res, func(t *text) { t.lines(res.Lines()) })
}
