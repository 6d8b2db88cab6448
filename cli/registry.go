package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/registry"
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

// registryLateFlags takes flags written after the positional arguments out of
// them: urfave/cli v2 stops reading flags at the first argument, and
// "registry push FILE --reason x" must still mean --reason. bools and
// values list the flag names (without dashes) the command accepts; the
// shared --json and --store are always understood. Anything else stays an argument.
func registryLateFlags(env *Env, c *ucli.Context, bools, values []string) ([]string, map[string]string, error) {
	// A --store written on the command itself wins over the app-level
	// default bound before the command's flags were read.
	if c.IsSet("store") {
		env.StoreURL = c.String("store")
	}
	late := map[string]string{}
	var args []string
	in := c.Args().Slice()
	for i := 0; i < len(in); i++ {
		a := in[i]
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || a == "-" {
			args = append(args, a)
			continue
		}
		switch {
		case name == "json" && !hasValue:
			env.JSON = true
		case name == "store":
			if !hasValue {
				if i+1 >= len(in) {
					return nil, nil, usagef("flag --store needs a value")
				}
				i++
				value = in[i]
			}
			env.StoreURL = value
		case containsName(bools, name) && !hasValue:
			late[name] = "true"
		case containsName(values, name):
			if !hasValue {
				if i+1 >= len(in) {
					return nil, nil, usagef("flag --%s needs a value", name)
				}
				i++
				value = in[i]
			}
			late[name] = value
		default:
			args = append(args, a)
		}
	}
	return args, late, nil
}

func containsName(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// registryFlagString returns the flag's value from the flag set or, failing that,
// from the late flags; ok says whether it was given at all.
func registryFlagString(c *ucli.Context, late map[string]string, name string) (string, bool) {
	if v, ok := late[name]; ok {
		return v, true
	}
	if c.IsSet(name) {
		return c.String(name), true
	}
	return "", false
}

func registryFlagRevision(c *ucli.Context, late map[string]string, name string) (int64, bool, error) {
	if v, ok := late[name]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, false, usagef("--%s wants a revision number, got %q", name, v)
		}
		return n, true, nil
	}
	if c.IsSet(name) {
		n := c.Int64(name)
		if n < 0 {
			return 0, false, usagef("--%s wants a revision number, got %d", name, n)
		}
		return n, true, nil
	}
	return 0, false, nil
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
	d, err := registry.Parse(data, file)
	if err != nil {
		return nil, err
	}
	if err := registry.Validate(d); err != nil {
		var ve *registry.ValidationError
		if errors.As(err, &ve) {
			ve.Source = file
		}
		return nil, err
	}
	return d, nil
}

// noRegistry turns ErrNotFound from Load into the refusal an operator reads.
func noRegistry(err error) error {
	if errors.Is(err, registry.ErrNotFound) {
		return &Refusal{Code: "not_found", Message: "the store holds no registry yet",
			Hint: "push one: stado registry push FILE", Err: err}
	}
	return err
}

// --- push ---

type registryPushOptions struct {
	File           string
	ExpectRevision int64
	HasExpect      bool // --expect-revision given; otherwise the revision read before writing
	Reason         string
	DryRun         bool
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
			&ucli.Int64Flag{Name: "expect-revision", Usage: "write only if the store holds revision `N` (0: none yet)"},
			&ucli.StringFlag{Name: "reason", Usage: "why this change is made, kept in the history"},
			&ucli.BoolFlag{Name: "dry-run", Usage: "validate and show the change without writing"},
		},
		Action: func(c *ucli.Context) error {
			args, late, err := registryLateFlags(env, c, []string{"dry-run"}, []string{"expect-revision", "reason"})
			if err != nil {
				return err
			}
			if len(args) != 1 {
				return usagef("registry push takes one FILE, got %d argument(s)", len(args))
			}
			opts := registryPushOptions{File: args[0], DryRun: c.Bool("dry-run") || late["dry-run"] == "true"}
			opts.Reason, _ = registryFlagString(c, late, "reason")
			if opts.ExpectRevision, opts.HasExpect, err = registryFlagRevision(c, late, "expect-revision"); err != nil {
				return err
			}
			return runRegistryPush(c.Context, env, opts)
		},
	}, true)
}

type registryPushResult struct {
	Kind             string          `json:"kind"`
	DryRun           bool            `json:"dry_run"`
	Revision         int64           `json:"revision"`
	PreviousRevision int64           `json:"previous_revision"`
	Meta             *registry.Meta  `json:"meta,omitempty"`
	Change           registry.Change `json:"change"`
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
	cur, meta, err := registry.Load(ctx, st)
	if err != nil && !errors.Is(err, registry.ErrNotFound) {
		return err
	}
	expect := meta.Revision
	if opts.HasExpect {
		expect = opts.ExpectRevision
	}
	res := registryPushResult{Kind: "stado.registry.push", DryRun: opts.DryRun, PreviousRevision: meta.Revision, Change: registry.Diff(cur, d)}
	if opts.DryRun {
		if expect != meta.Revision {
			return conflictRefusal(&registry.ConflictError{Key: registry.RegistryKey, Want: expect, Got: meta.Revision})
		}
		res.Revision = meta.Revision
		return printPush(env, res)
	}
	m, err := registry.Push(ctx, st, d, expect, opts.Reason)
	var ce *registry.ConflictError
	if errors.As(err, &ce) {
		return conflictRefusal(ce)
	}
	if m.Revision == 0 {
		return err
	}
	res.Revision, res.Meta = m.Revision, &m
	if perr := printPush(env, res); perr != nil {
		return perr
	}
	return err // the history entry could not be written
}

func conflictRefusal(ce *registry.ConflictError) error {
	return &Refusal{
		Code:    "conflict",
		Message: fmt.Sprintf("the store holds registry revision %d, not the expected %d", ce.Got, ce.Want),
		Hint:    "pull the current revision, reapply the change and push with --expect-revision",
		Details: map[string]int64{"expected_revision": ce.Want, "store_revision": ce.Got},
		Err:     ce,
	}
}

func printPush(env *Env, res registryPushResult) error {
	if env.JSON {
		return printJSON(env, res)
	}
	w := env.Stdout
	switch {
	case res.DryRun:
		fmt.Fprintf(w, "dry run: valid; registry stays at revision %d\n", res.Revision)
	case res.PreviousRevision == 0:
		fmt.Fprintf(w, "pushed registry revision %d (first revision)\n", res.Revision)
	default:
		fmt.Fprintf(w, "pushed registry revision %d (was %d)\n", res.Revision, res.PreviousRevision)
	}
	printChange(w, res.Change)
	return nil
}

func printChange(w io.Writer, c registry.Change) {
	if c.Empty() {
		fmt.Fprintln(w, "  no change")
		return
	}
	line := func(label string, items []string) {
		if len(items) > 0 {
			fmt.Fprintf(w, "  %-18s %s\n", label+":", strings.Join(items, ", "))
		}
	}
	line("targets added", c.TargetsAdded)
	line("targets changed", c.TargetsChanged)
	line("targets removed", c.TargetsRemoved)
	line("services added", c.ServicesAdded)
	line("services changed", c.ServicesChanged)
	line("services removed", c.ServicesRemoved)
	line("directory added", c.DirectoryAdded)
	line("directory changed", c.DirectoryChanged)
	line("directory removed", c.DirectoryRemoved)
	if c.ResolverChanged {
		fmt.Fprintln(w, "  service_resolver changed")
	}
}

// --- pull ---

type registryPullOptions struct {
	Revision int64 // 0: current
	Format   string
}

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
			args, late, err := registryLateFlags(env, c, nil, []string{"revision", "format"})
			if err != nil {
				return err
			}
			if len(args) != 0 {
				return usagef("registry pull takes no arguments, got %q", args)
			}
			opts := registryPullOptions{Format: c.String("format")}
			if f, ok := late["format"]; ok {
				opts.Format = f
			}
			if opts.Format != registry.FormatYAML && opts.Format != registry.FormatJSON {
				return usagef("--format wants yaml or json, got %q", opts.Format)
			}
			if opts.Revision, _, err = registryFlagRevision(c, late, "revision"); err != nil {
				return err
			}
			return runRegistryPull(c.Context, env, opts)
		},
	}, true)
}

type registryPullResult struct {
	Kind     string             `json:"kind"`
	Revision int64              `json:"revision"`
	Meta     registry.Meta      `json:"meta"`
	Document *registry.Document `json:"document"`
}

// loadAt loads the current registry (rev 0) or revision rev.
func loadAt(ctx context.Context, st registry.Store, rev int64) (*registry.Document, registry.Meta, error) {
	if rev == 0 {
		d, m, err := registry.Load(ctx, st)
		return d, m, noRegistry(err)
	}
	d, m, err := registry.LoadRevision(ctx, st, rev)
	if errors.Is(err, registry.ErrNotFound) {
		return nil, m, &Refusal{Code: "not_found", Message: fmt.Sprintf("registry revision %d is not retained", rev),
			Hint: "list the retained revisions: stado registry history", Err: err}
	}
	return d, m, err
}

func runRegistryPull(ctx context.Context, env *Env, opts registryPullOptions) error {
	st, err := openStore(ctx, env)
	if err != nil {
		return err
	}
	defer st.Close()
	d, m, err := loadAt(ctx, st, opts.Revision)
	if err != nil {
		return err
	}
	if env.JSON {
		return printJSON(env, registryPullResult{Kind: "stado.registry.pull", Revision: m.Revision, Meta: m, Document: d})
	}
	out, err := registry.Marshal(d, opts.Format)
	if err != nil {
		return err
	}
	_, err = env.Stdout.Write(out)
	return err
}

// --- show ---

type registryShowOptions struct{}

func newRegistryShowCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "show",
		Usage: "summarise the current registry: revision, writer, targets and services",
		UsageText: "stado registry show [--json]\n\n" +
			"Services whose declaration has no program are flagged declaration_incomplete:\n" +
			"they cannot be reinstalled from the document.\n\n" +
			"example:\n   stado registry show\n   stado registry show --json",
		Action: func(c *ucli.Context) error {
			args, _, err := registryLateFlags(env, c, nil, nil)
			if err != nil {
				return err
			}
			if len(args) != 0 {
				return usagef("registry show takes no arguments, got %q", args)
			}
			return runRegistryShow(c.Context, env, registryShowOptions{})
		},
	}, true)
}

type showService struct {
	Name     string `json:"name"`
	Unit     string `json:"unit"`
	UnitPath string `json:"unit_path,omitempty"`
	Program  string `json:"program,omitempty"`
	Scope    string `json:"scope"`
	Product  string `json:"product,omitempty"`
	// Status is "declared", or "declaration_incomplete" when there is no program.
	Status           string `json:"status"`
	IncompleteReason string `json:"incomplete_reason,omitempty"`
}

type showTarget struct {
	Name          string        `json:"name"`
	Address       string        `json:"address"`
	Port          int           `json:"port"`
	User          string        `json:"user"`
	OS            string        `json:"os"`
	LaunchdDomain string        `json:"launchd_domain,omitempty"`
	Alerts        []string      `json:"alerts,omitempty"`
	Services      []showService `json:"services"`
}

type registryShowResult struct {
	Kind           string                    `json:"kind"`
	Revision       int64                     `json:"revision"`
	Meta           registry.Meta             `json:"meta"`
	RefreshSeconds int                       `json:"refresh_seconds,omitempty"`
	Targets        []showTarget              `json:"targets"`
	Directory      []registry.DirectoryEntry `json:"directory"`
	Incomplete     int                       `json:"incomplete"`
}

func runRegistryShow(ctx context.Context, env *Env, _ registryShowOptions) error {
	st, err := openStore(ctx, env)
	if err != nil {
		return err
	}
	defer st.Close()
	d, m, err := loadAt(ctx, st, 0)
	if err != nil {
		return err
	}
	res := registryShowResult{Kind: "stado.registry.show", Revision: m.Revision, Meta: m,
		RefreshSeconds: d.ServiceResolver.RefreshSeconds, Targets: []showTarget{}, Directory: d.Directory}
	if res.Directory == nil {
		res.Directory = []registry.DirectoryEntry{}
	}
	for _, t := range d.Targets {
		st := showTarget{Name: t.Name, Address: t.SSH.Address, Port: t.SSH.Port, User: t.SSH.User, OS: t.OS,
			LaunchdDomain: t.LaunchdDomain, Services: []showService{}}
		if st.Address == "" {
			st.Address = t.Name
		}
		if st.Port == 0 {
			st.Port = 22
		}
		if st.User == "" {
			st.User = "root"
		}
		for _, a := range t.Alerts {
			st.Alerts = append(st.Alerts, a.Name)
		}
		for _, s := range t.Services {
			ss := showService{Name: s.Name, Unit: s.Unit, UnitPath: s.UnitPath, Program: s.Program,
				Scope: s.EffectiveScope(), Product: s.Product, Status: "declared"}
			if s.Incomplete() {
				ss.Status, ss.IncompleteReason = "declaration_incomplete", s.IncompleteReason
				res.Incomplete++
			}
			st.Services = append(st.Services, ss)
		}
		res.Targets = append(res.Targets, st)
	}
	if env.JSON {
		return printJSON(env, res)
	}
	w := env.Stdout
	fmt.Fprintf(w, "registry revision %d\n", res.Revision)
	fmt.Fprintf(w, "  writer  %s\n  time    %s\n", m.Writer, m.Time.Format(time.RFC3339))
	if m.Reason != "" {
		fmt.Fprintf(w, "  reason  %s\n", m.Reason)
	}
	if res.RefreshSeconds > 0 {
		fmt.Fprintf(w, "  service_resolver.refresh_seconds  %d\n", res.RefreshSeconds)
	}
	fmt.Fprintf(w, "\ntargets (%d):\n", len(res.Targets))
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	for _, t := range res.Targets {
		fmt.Fprintf(tw, "  %s\t%s@%s:%d\t%s\n", t.Name, t.User, t.Address, t.Port, t.OS)
		for _, s := range t.Services {
			what := s.Program
			if s.Status == "declaration_incomplete" {
				what = "declaration_incomplete"
				if s.IncompleteReason != "" {
					what += " (" + s.IncompleteReason + ")"
				}
			}
			fmt.Fprintf(tw, "    %s\t%s\t%s\t%s\n", s.Name, s.Unit, s.Scope, what)
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "\ndirectory (%d):\n", len(res.Directory))
	for _, e := range res.Directory {
		callers := "every target"
		if len(e.Callers) > 0 {
			callers = strings.Join(e.Callers, ", ")
		}
		fmt.Fprintf(w, "  %s -> %s:%d  callers: %s\n", e.Service, e.Host, e.Port, callers)
	}
	if res.Incomplete > 0 {
		fmt.Fprintf(w, "\n%d declaration(s) incomplete: they name a unit but no program, so they cannot be reinstalled\n", res.Incomplete)
	}
	return nil
}

// --- history ---

type registryHistoryOptions struct{}

func newRegistryHistoryCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "history",
		Usage: "list the retained registry revisions, newest first",
		UsageText: "stado registry history [--json]\n\n" +
			"Each revision with its writer, time and reason; read one with\n" +
			"stado registry pull --revision N.\n\n" +
			"example:\n   stado registry history\n   stado registry history --json",
		Action: func(c *ucli.Context) error {
			args, _, err := registryLateFlags(env, c, nil, nil)
			if err != nil {
				return err
			}
			if len(args) != 0 {
				return usagef("registry history takes no arguments, got %q", args)
			}
			return runRegistryHistory(c.Context, env, registryHistoryOptions{})
		},
	}, true)
}

type registryHistoryResult struct {
	Kind      string          `json:"kind"`
	Revisions []registry.Meta `json:"revisions"`
}

func runRegistryHistory(ctx context.Context, env *Env, _ registryHistoryOptions) error {
	st, err := openStore(ctx, env)
	if err != nil {
		return err
	}
	defer st.Close()
	h, err := registry.History(ctx, st)
	if err != nil {
		return err
	}
	newest := make([]registry.Meta, 0, len(h))
	for i := len(h) - 1; i >= 0; i-- {
		newest = append(newest, h[i])
	}
	if env.JSON {
		return printJSON(env, registryHistoryResult{Kind: "stado.registry.history", Revisions: newest})
	}
	if len(newest) == 0 {
		fmt.Fprintln(env.Stdout, "no registry revisions yet")
		return nil
	}
	tw := tabwriter.NewWriter(env.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REVISION\tTIME\tWRITER\tREASON")
	for _, m := range newest {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", m.Revision, m.Time.Format(time.RFC3339), m.Writer, m.Reason)
	}
	return tw.Flush()
}

// --- validate ---

type registryValidateOptions struct{ File string }

func newRegistryValidateCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:      "validate",
		Usage:     "check a registry document without writing it",
		ArgsUsage: "FILE",
		UsageText: "stado registry validate FILE [--json]\n\n" +
			"Reports every violation with its field path (exit 3), or a summary of a\n" +
			"valid document. Reads no store. - reads stdin.\n\n" +
			"example:\n   stado registry validate examples/fleet.yaml",
		Action: func(c *ucli.Context) error {
			args, _, err := registryLateFlags(env, c, nil, nil)
			if err != nil {
				return err
			}
			if len(args) != 1 {
				return usagef("registry validate takes one FILE, got %d argument(s)", len(args))
			}
			return runRegistryValidate(c.Context, env, registryValidateOptions{File: args[0]})
		},
	}, true)
}

type registryValidateResult struct {
	Kind       string   `json:"kind"`
	File       string   `json:"file"`
	Valid      bool     `json:"valid"`
	Targets    int      `json:"targets"`
	Services   int      `json:"services"`
	Directory  int      `json:"directory"`
	Incomplete []string `json:"incomplete"`
}

func runRegistryValidate(_ context.Context, env *Env, opts registryValidateOptions) error {
	d, err := readDocumentFile(env, opts.File)
	if err != nil {
		return err
	}
	res := registryValidateResult{Kind: "stado.registry.validate", File: opts.File, Valid: true,
		Targets: len(d.Targets), Directory: len(d.Directory), Incomplete: []string{}}
	for _, t := range d.Targets {
		res.Services += len(t.Services)
		for _, s := range t.Services {
			if s.Incomplete() {
				res.Incomplete = append(res.Incomplete, t.Name+"/"+s.Name)
			}
		}
	}
	if env.JSON {
		return printJSON(env, res)
	}
	fmt.Fprintf(env.Stdout, "%s: valid (%d targets, %d services, %d directory entries)\n", opts.File, res.Targets, res.Services, res.Directory)
	for _, name := range res.Incomplete {
		fmt.Fprintf(env.Stdout, "  %s: declaration_incomplete (no program; cannot be reinstalled)\n", name)
	}
	return nil
}
