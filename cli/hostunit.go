package cli

import (
	"context"
	"fmt"
	"os"
	"runtime"

	"github.com/wisent/stado/fleet"
	"github.com/wisent/stado/refusal"

	ucli "github.com/urfave/cli/v2"
	"gopkg.in/yaml.v3"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/units"
)

func newHostUnitCommand(env *Env) *ucli.Command {
	return &ucli.Command{
		Name:  "unit",
		Usage: "render, parse, inspect and read the logs of units on this host",
		Subcommands: []*ucli.Command{
			newHostUnitShowCommand(env),
			newHostUnitRenderCommand(env),
			newHostUnitParseCommand(env),
			newHostUnitLogsCommand(env),
		},
	}
}

func homeDir(env *Env) string {
	if h := env.Getenv("HOME"); h != "" {
		return h
	}
	h, _ := os.UserHomeDir()
	return h
}

// hostUnitManager opens the Manager of this host's init system.
func hostUnitManager(ctx context.Context, env *Env, user bool) (units.Manager, func(), error) {
	return units.Open(ctx, runtime.GOOS, scopeOf(user), homeDir(env))
}

// --- show ---

type hostUnitShowOptions struct {
	Unit string
	User bool
}

func newHostUnitShowCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:      "show",
		Usage:     "show a loaded unit's state on this host, with the failing verdict of a crash loop",
		ArgsUsage: "UNIT",
		UsageText: "stado host unit show UNIT [--user] [--json]\n\n" +
			"Reads the unit from systemd (D-Bus) or launchd (launchctl print): active with its\n" +
			"pid, inactive, failed, or failing when it runs no process, its last run exited\n" +
			"nonzero and its supervisor keeps starting it. A unit the init system does not\n" +
			"hold is refused with not_found.\n\n" +
			"example:\n   stado host unit show brama.service --json",
		Flags: []ucli.Flag{&ucli.BoolFlag{Name: "user", Usage: "read the user manager (systemd --user, launchd gui/<uid>)"}},
		Action: func(c *ucli.Context) error {
			unit, err := oneArg(c, "UNIT")
			if err != nil {
				return err
			}
			return runHostUnitShow(c.Context, env, hostUnitShowOptions{Unit: unit, User: c.Bool("user")})
		},
	}, true)
}

func runHostUnitShow(ctx context.Context, env *Env, opts hostUnitShowOptions) error {
	m, done, err := hostUnitManager(ctx, env, opts.User)
	if err != nil {
		return err
	}
	defer done()
	v, err := units.ShowLoaded(ctx, m, opts.Unit)
	if err != nil {
		return err
	}
	return printVerdict(env, v)
}

func printVerdict(env *Env, v units.Verdict) error {
	return emit(env, "stado.host.unit", v, func(t *text) {
		for _, l := range fleet.VerdictLine(v) {
			t.f("%s\n", l)
		}
	})
}

// --- render ---

type hostUnitRenderOptions struct {
	Service  string
	OS       string // empty: the target's OS, else this machine's
	Registry string // registry document file
	Host     string // target name; empty searches every target
}

func newHostUnitRenderCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:      "render",
		Usage:     "print exactly the unit file ensure would write for a declared service",
		ArgsUsage: "SERVICE",
		UsageText: "stado host unit render SERVICE --registry FILE [--host H] [--os linux|darwin]\n\n" +
			"Finds SERVICE (a name or unit identity) among the targets of the registry\n" +
			"document FILE (on target H when given) and prints its systemd unit or launchd\n" +
			"property list. A declaration without a program is refused with\n" +
			"declaration_incomplete.\n\n" +
			"example:\n   stado host unit render brama --registry examples/fleet.yaml --host host1",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "os", Usage: "linux or darwin; default: the target's os"},
			&ucli.StringFlag{Name: "registry", Usage: "registry document (YAML or JSON) to find SERVICE in"},
			&ucli.StringFlag{Name: "host", Usage: "target whose declaration to render"},
		},
		Action: func(c *ucli.Context) error {
			svc, err := oneArg(c, "SERVICE")
			if err != nil {
				return err
			}
			return runHostUnitRender(c.Context, env, hostUnitRenderOptions{Service: svc, OS: c.String("os"), Registry: c.String("registry"), Host: c.String("host")})
		},
	}, false)
}

func runHostUnitRender(_ context.Context, env *Env, opts hostUnitRenderOptions) error {
	if opts.OS != "" && opts.OS != registry.OSLinux && opts.OS != registry.OSDarwin {
		return usagef("--os must be linux or darwin, not %q", opts.OS)
	}
	if opts.Registry == "" {
		return &Refusal{Code: refusal.NotFound, Message: fmt.Sprintf("service %s: no registry document to find it in", opts.Service),
			Hint: "pass --registry FILE naming the registry document that declares it"}
	}
	out, err := units.RenderFromFile(opts.Registry, opts.Host, opts.Service, opts.OS, homeDir(env))
	if err != nil {
		return err
	}
	_, err = env.Stdout.Write(out)
	return err
}

// --- parse ---

type hostUnitParseOptions struct {
	File    string
	Dropins string // directory of drop-ins; empty: FILE.d when it exists
	// Instance reads a template FILE (NAME@.service) as its instance
	// NAME@INSTANCE.service; empty reads FILE as the unit its name says.
	Instance string
}

func newHostUnitParseCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:      "parse",
		Usage:     "print the declaration adopt would record from a unit file or property list",
		ArgsUsage: "FILE",
		UsageText: "stado host unit parse FILE [--dropins DIR] [--instance NAME] [--json]\n\n" +
			"Reads a systemd unit (with the *.conf drop-ins of DIR, default FILE.d, in name\n" +
			"order) or a launchd property list, XML or binary, on any OS. Prints a complete\n" +
			"declaration, or the incomplete one with every blocker: the key, the file (a\n" +
			"drop-in by its name) and line, and what would make the unit adoptable. --json\n" +
			"gives the blockers as a list. --instance reads a template (NAME@.service) as\n" +
			"its instance NAME@INSTANCE.service, the specifiers of the unit's name written\n" +
			"out for it, as service adopt does for an instance a host runs.\n\n" +
			"example:\n   stado host unit parse /etc/systemd/system/brama.service --json\n" +
			"   stado host unit parse /lib/systemd/system/postgresql@.service --instance 15-main",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "dropins", Usage: "directory of *.conf drop-ins to apply"},
			&ucli.StringFlag{Name: "instance", Usage: "read a template FILE as this instance of it"},
		},
		Action: func(c *ucli.Context) error {
			file, err := oneArg(c, "FILE")
			if err != nil {
				return err
			}
			return runHostUnitParse(c.Context, env, hostUnitParseOptions{File: file, Dropins: c.String("dropins"), Instance: c.String("instance")})
		},
	}, true)
}

func runHostUnitParse(_ context.Context, env *Env, opts hostUnitParseOptions) error {
	p, err := units.ParseFileAt(opts.File, opts.Dropins, opts.Instance)
	if err != nil {
		return err
	}
	out, err := yaml.Marshal(p.Service)
	if err != nil {
		return err
	}
	return emit(env, "stado.host.unit.parse", p, func(t *text) {
		t.lines(p.Comments())
		t.f("%s", out)
	})
}

// --- logs ---

type hostUnitLogsOptions struct {
	Unit  string
	Lines int
	User  bool
}

func newHostUnitLogsCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:      "logs",
		Usage:     "print the last lines a unit's program wrote (journal, or the plist's log files)",
		ArgsUsage: "UNIT",
		UsageText: "stado host unit logs UNIT [--lines N] [--user] [--json]\n\n" +
			"On Linux reads the journal of UNIT; on macOS the StandardOutPath and\n" +
			"StandardErrorPath of its property list, or $HOME/.stado/logs/UNIT.log.\n\n" +
			"example:\n   stado host unit logs brama.service --lines 100",
		Flags: []ucli.Flag{
			&ucli.IntFlag{Name: "lines", Value: 50, Usage: "how many lines to print"},
			&ucli.BoolFlag{Name: "user", Usage: "read the user manager's unit"},
		},
		Action: func(c *ucli.Context) error {
			unit, err := oneArg(c, "UNIT")
			if err != nil {
				return err
			}
			if c.Int("lines") <= 0 {
				return usagef("--lines must be positive, not %d", c.Int("lines"))
			}
			return runHostUnitLogs(c.Context, env, hostUnitLogsOptions{Unit: unit, Lines: c.Int("lines"), User: c.Bool("user")})
		},
	}, true)
}

func runHostUnitLogs(ctx context.Context, env *Env, opts hostUnitLogsOptions) error {
	m, done, err := hostUnitManager(ctx, env, opts.User)
	if err != nil {
		return err
	}
	defer done()
	lines, err := m.Logs(ctx, opts.Unit, opts.Lines)
	if err != nil {
		return err
	}
	doc := fleet.LogsResult{Unit: opts.Unit, Lines: append([]string{}, lines...)}
	return emit(env, "stado.host.unit.logs", doc, func(t *text) {
		for _, l := range lines {
			t.f("%s\n", l)
		}
	})
}
