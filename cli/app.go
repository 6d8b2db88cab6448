package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/printer"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
	"github.com/wisent/stado/store/etcdstore"
)

// Version is stado's version and Commit the source revision it was built
// from, both set at build time with -ldflags -X (the Makefile's build).
var (
	Version = "0.1.0-dev"
	Commit  = "unknown"
)

// Env carries everything a command depends on, so tests replace any part.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Now is the clock.
	Now func() time.Time
	// Getenv reads the process environment.
	Getenv func(string) string
	// Logger writes structured diagnostics to stderr.
	Logger *slog.Logger
	// OpenStore opens the store named by a URL (--store); tests replace it.
	OpenStore func(ctx context.Context, url string) (store.Store, error)
	// JSON is set by the global --json flag.
	JSON bool
	// StoreURL is the resolved --store value.
	StoreURL string
	// StartKeeper starts this user's connection keeper when a command
	// needs a host and no keeper answers (Main: this executable's `host
	// keeper`). Nil starts none: a command then rides a keeper only if one
	// already answers, and dials directly otherwise. Tests inject it.
	StartKeeper func() error

	unknownCommand string
}

// NewEnv returns the Env of a real process.
func NewEnv(stdin io.Reader, stdout, stderr io.Writer) *Env {
	return &Env{
		Stdin:     stdin,
		Stdout:    stdout,
		Stderr:    stderr,
		Now:       time.Now,
		Getenv:    os.Getenv,
		Logger:    slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo})),
		OpenStore: store.Open,
	}
}

// Main runs stado with args and returns the process exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	env := NewEnv(stdin, stdout, stderr)
	env.StartKeeper = startThisKeeper()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, env, args)
}

// Run runs the app in env and returns the exit code; errors are printed
// (as JSON on stderr under --json) here and nowhere else.
func Run(ctx context.Context, env *Env, args []string) int {
	app := NewApp(env)
	err := app.RunContext(ctx, interspersed(app, args))
	if err == nil && env.unknownCommand != "" {
		err = usagef("unknown command %q; see stado --help", env.unknownCommand)
	}
	code, machine := exitCode(err)
	if err != nil {
		printError(env, err, code, machine)
	}
	return code
}

// storeFlag and jsonFlag are the shared flags, declared once and attached
// to the app and to every reporting command.
func storeFlag() ucli.Flag {
	return &ucli.StringFlag{
		Name:    "store",
		Usage:   "store URL: file:///DIR or etcd://HOST:PORT[,HOST:PORT]/PREFIX",
		EnvVars: []string{"STADO_STORE"},
	}
}

func jsonFlag() ucli.Flag {
	return &ucli.BoolFlag{Name: "json", Usage: "print one JSON document on stdout"}
}

// defaultStoreURL is the store a command uses when neither --store nor
// STADO_STORE names one (store.DefaultURL of $HOME, else the user's home).
func defaultStoreURL(env *Env) string {
	home := env.Getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return store.DefaultURL(home)
}

// NewApp builds the command tree.
func NewApp(env *Env) *ucli.App {
	app := &ucli.App{
		Name:      "stado",
		Usage:     "keep a fleet's long-running services the way their owner declared them",
		Version:   Version,
		Writer:    env.Stdout,
		ErrWriter: env.Stderr,
		Reader:    env.Stdin,
		Flags:     []ucli.Flag{storeFlag(), jsonFlag()},
		// Errors are printed by Run; urfave must not exit the process.
		ExitErrHandler:       func(*ucli.Context, error) {},
		HideVersion:          true,
		EnableBashCompletion: false,
		Commands:             commands(env),
		OnUsageError: func(c *ucli.Context, err error, _ bool) error {
			return &usageError{msg: err.Error()}
		},
	}
	app.CommandNotFound = func(_ *ucli.Context, name string) { env.unknownCommand = name }
	app.Before = func(c *ucli.Context) error { return bindGlobals(env, c) }
	return app
}

// bindGlobals reads --json and --store wherever they were written on the
// command line (before or after the command name).
func bindGlobals(env *Env, c *ucli.Context) error {
	for _, ctx := range c.Lineage() {
		if ctx.IsSet("json") && ctx.Bool("json") {
			env.JSON = true
		}
	}
	// The innermost context that names a store wins: a command's own
	// --store overrides one written before the command name.
	for _, ctx := range c.Lineage() {
		if ctx.IsSet("store") && ctx.String("store") != "" {
			env.StoreURL = ctx.String("store")
			return nil
		}
	}
	if env.StoreURL == "" {
		if v := env.Getenv("STADO_STORE"); v != "" {
			env.StoreURL = v
		} else {
			env.StoreURL = defaultStoreURL(env)
		}
	}
	return nil
}

// withShared attaches the shared flags to a command and binds them before
// its action runs. reporting says whether --json applies.
func withShared(env *Env, cmd *ucli.Command, reporting bool) *ucli.Command {
	cmd.Flags = append(cmd.Flags, storeFlag())
	if reporting {
		cmd.Flags = append(cmd.Flags, jsonFlag())
	}
	prev := cmd.Before
	cmd.Before = func(c *ucli.Context) error {
		if err := bindGlobals(env, c); err != nil {
			return err
		}
		if prev != nil {
			return prev(c)
		}
		return nil
	}
	if cmd.OnUsageError == nil {
		cmd.OnUsageError = func(c *ucli.Context, err error, _ bool) error {
			return &usageError{msg: err.Error()}
		}
	}
	return cmd
}

// openStore opens the store the globals name.
func openStore(ctx context.Context, env *Env) (store.Store, error) {
	st, err := env.OpenStore(ctx, env.StoreURL)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", etcdstore.Redact(env.StoreURL), err)
	}
	return st, nil
}

// errorDoc is the JSON form of a final error on stderr.
type errorDoc struct {
	Kind    string `json:"kind"`
	Code    string `json:"code"`
	Exit    int    `json:"exit"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
	Details any    `json:"details,omitempty"`
}

func printError(env *Env, err error, code int, machine string) {
	doc := errorDoc{Kind: "stado.error", Code: machine, Exit: code, Message: err.Error()}
	var ref *Refusal
	var val *registry.ValidationError
	if errors.As(err, &ref) {
		doc.Hint = ref.Hint
		doc.Details = ref.Details
	}
	if errors.As(err, &val) {
		doc.Details = val.Violations
	}
	if env.JSON {
		enc := json.NewEncoder(env.Stderr)
		enc.SetIndent("", "  ")
		_ = enc.Encode(doc)
		return
	}
	fmt.Fprintf(env.Stderr, "stado: %s\n", printer.EscapeLines(err.Error()))
	if doc.Hint != "" {
		fmt.Fprintf(env.Stderr, "hint: %s\n", printer.EscapeLines(doc.Hint))
	}
}
