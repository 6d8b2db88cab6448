package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/registry"
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
			"site catalog in the store (key " + registry.CatalogKey + ") is merged over the shipped one\n" +
			"unless --shipped is given.\n\n" +
			"example:\n   stado catalog show\n   stado catalog show com.wisent.stado --json",
		Flags: []ucli.Flag{
			&ucli.BoolFlag{Name: "shipped", Usage: "show the catalog built into this binary, without reading the store"},
		},
		Action: func(c *ucli.Context) error {
			args, late := catalogArgs(env, c)
			if len(args) > 1 {
				return usagef("catalog show takes at most one NAME or UNIT, got %d", len(args))
			}
			opts := catalogShowOptions{Shipped: c.Bool("shipped") || late["shipped"]}
			if len(args) == 1 {
				opts.Name = args[0]
			}
			return runCatalogShow(c.Context, env, opts)
		},
	}, true)
}

// catalogArgs returns the positional arguments with the boolean flags
// --json and --shipped taken out: urfave/cli v2 stops reading flags at the
// first argument, and "catalog show NAME --json" must still mean --json.
// Anything else that looks like a flag after an argument stays an argument
// and is refused by the caller's argument count or lookup.
func catalogArgs(env *Env, c *ucli.Context) ([]string, map[string]bool) {
	late := map[string]bool{}
	var args []string
	for _, a := range c.Args().Slice() {
		switch a {
		case "--json", "-json":
			env.JSON = true
			late["json"] = true
		case "--shipped", "-shipped":
			late["shipped"] = true
		default:
			args = append(args, a)
		}
	}
	return args, late
}

// loadCatalog returns the merged catalog from the store, or the shipped one.
func loadCatalog(ctx context.Context, env *Env, shippedOnly bool) (*catalog.Catalog, error) {
	if shippedOnly {
		return catalog.Shipped(), nil
	}
	st, err := openStore(ctx, env)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return catalog.Load(ctx, st)
}

// catalogShowDoc is the --json form of catalog show.
type catalogShowDoc struct {
	Kind         string                `json:"kind"`
	SiteRevision int64                 `json:"site_revision"`
	Products     []*catalog.Product    `json:"products,omitempty"`
	Recovery     []*catalog.Product    `json:"recovery,omitempty"`
	Steps        []*catalog.RepairStep `json:"steps,omitempty"`
	Entry        *catalog.Product      `json:"entry,omitempty"`
	RepairSteps  []*catalog.RepairStep `json:"repair_steps,omitempty"`
}

func runCatalogShow(ctx context.Context, env *Env, opts catalogShowOptions) error {
	cat, err := loadCatalog(ctx, env, opts.Shipped)
	if err != nil {
		return err
	}
	doc := catalogShowDoc{Kind: "stado.catalog.show", SiteRevision: cat.SiteRevision()}
	if opts.Name == "" {
		doc.Products, doc.Recovery, doc.Steps = cat.Products(), cat.Recovery(), cat.Steps()
		if env.JSON {
			return printJSON(env, doc)
		}
		return printCatalogTable(env.Stdout, cat)
	}
	p, ok := cat.Lookup(opts.Name)
	if !ok {
		p, ok = cat.RecoveryEntry(opts.Name)
	}
	if !ok {
		r := refuse("not_found", "no catalog entry is named %q or has it as its unit", opts.Name)
		r.Hint = "stado catalog show lists every product"
		return r
	}
	doc.Entry = p
	doc.RepairSteps = []*catalog.RepairStep{}
	if p.Answering != nil {
		for _, name := range p.Answering.Repair {
			if s, ok := cat.Step(name); ok {
				doc.RepairSteps = append(doc.RepairSteps, s)
			}
		}
	}
	if env.JSON {
		return printJSON(env, doc)
	}
	return printCatalogEntry(env.Stdout, p, doc.RepairSteps)
}

func catalogDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func printCatalogTable(w io.Writer, cat *catalog.Catalog) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSOURCE\tORIGIN\tPORT\tSYSTEMD\tLAUNCHD\tANSWERING")
	rows := append(cat.Products(), cat.Recovery()...)
	for _, p := range rows {
		port := "-"
		if p.Port != 0 {
			port = strconv.Itoa(p.Port)
		}
		answering := "-"
		if a := p.Answering; a != nil {
			answering = a.Method + " " + a.Path
			if len(a.Repair) > 0 {
				answering += " (repair: " + strings.Join(a.Repair, ", ") + ")"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, p.Source, p.Origin, port,
			catalogDash(p.Units.Systemd), catalogDash(p.Units.Launchd), answering)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	site := "none (shipped catalog only)"
	if r := cat.SiteRevision(); r != 0 {
		site = fmt.Sprintf("revision %d", r)
	}
	_, err := fmt.Fprintf(w, "\nsite catalog: %s; repair steps: %s\n", site, catalogStepNames(cat.Steps()))
	return err
}

func catalogStepNames(steps []*catalog.RepairStep) string {
	names := make([]string, len(steps))
	for i, s := range steps {
		names[i] = s.Name
	}
	return strings.Join(names, ", ")
}

// argvText renders an argv array for reading, quoting items that need it;
// it is never executed.
func catalogArgv(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\"'\\$`") {
			a = strconv.Quote(a)
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

func printCatalogEntry(w io.Writer, p *catalog.Product, steps []*catalog.RepairStep) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	line := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	line("name:", p.Name)
	if p.Description != "" {
		line("description:", p.Description)
	}
	line("source:", p.Source+" ("+p.Origin+")")
	line("systemd:", catalogDash(p.Units.Systemd))
	line("launchd:", catalogDash(p.Units.Launchd))
	line("program:", catalogArgv(append([]string{p.Program}, p.Args...)))
	if len(p.Env) == 0 {
		line("env:", "-")
	}
	for i, e := range p.Env {
		k := ""
		if i == 0 {
			k = "env:"
		}
		if e.Default != nil {
			line(k, e.Name+"="+*e.Default+" (default)")
		} else {
			line(k, e.Name+" (required)")
		}
	}
	if p.Port != 0 {
		line("port:", strconv.Itoa(p.Port))
	} else {
		line("port:", "-")
	}
	if a := p.Answering; a != nil {
		line("answering:", a.Method+" "+a.Path)
		if len(a.Body) > 0 {
			line("  body:", string(a.Body))
		}
		if len(a.Repair) > 0 {
			line("  repair:", strings.Join(a.Repair, ", "))
		} else {
			line("  repair:", "none (restart only)")
		}
	} else {
		line("answering:", "none")
	}
	for _, s := range steps {
		line("", "")
		line("repair step:", s.Name+" ("+s.Origin+")")
		if s.Description != "" {
			line("  description:", s.Description)
		}
		if len(s.Needs) > 0 {
			line("  needs:", strings.Join(s.Needs, ", ")+" (from the caller)")
		}
		for _, os := range []string{"linux", "darwin"} {
			pl, ok := s.For(os)
			if !ok {
				line("  "+os+":", "no payload")
				continue
			}
			line("  "+os+":", catalogArgv(pl.Argv))
			for _, k := range slices.Sorted(maps.Keys(pl.Env)) {
				line("", "  env "+k+"="+pl.Env[k])
			}
			line("", fmt.Sprintf("  timeout %ds", pl.TimeoutSeconds))
		}
	}
	return tw.Flush()
}

type catalogValidateOptions struct {
	File string
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
			args, _ := catalogArgs(env, c)
			if len(args) != 1 {
				return usagef("catalog validate takes one FILE, got %d arguments", len(args))
			}
			return runCatalogValidate(c.Context, env, catalogValidateOptions{File: args[0]})
		},
	}, true)
}

// catalogValidateDoc is the --json form of a valid catalog validate.
type catalogValidateDoc struct {
	Kind     string   `json:"kind"`
	File     string   `json:"file"`
	Valid    bool     `json:"valid"`
	Products []string `json:"products"`
	Steps    []string `json:"steps"`
}

func runCatalogValidate(_ context.Context, env *Env, opts catalogValidateOptions) error {
	data, err := os.ReadFile(opts.File)
	if err != nil {
		return fmt.Errorf("read site catalog: %w", err)
	}
	merged, err := catalog.ValidateSite(data, opts.File)
	if err != nil {
		return err
	}
	doc := catalogValidateDoc{Kind: "stado.catalog.validate", File: opts.File, Valid: true, Products: []string{}, Steps: []string{}}
	for _, p := range merged.Products() {
		if p.Origin == catalog.OriginSite {
			doc.Products = append(doc.Products, p.Name)
		}
	}
	for _, s := range merged.Steps() {
		if s.Origin == catalog.OriginSite {
			doc.Steps = append(doc.Steps, s.Name)
		}
	}
	if env.JSON {
		return printJSON(env, doc)
	}
	_, err = fmt.Fprintf(env.Stdout, "%s: valid site catalog (%d product(s), %d repair step(s) added or replaced)\n",
		opts.File, len(doc.Products), len(doc.Steps))
	return err
}
