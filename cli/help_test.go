package cli

import (
	"bytes"
	"strings"
	"testing"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/channel"
)

// reportingExempt lists leaf commands that print nothing a script would
// parse (their output is the stream or file itself), so they carry no --json.
var reportingExempt = map[string]bool{
	"stado registry pull":    true, // prints the document itself
	"stado host unit render": true, // prints the unit file itself
	"stado host channel":     true, // the forced command: always JSON
	"stado host run":         true, // the long-running host process
	"stado resolver proxy":   true, // a long-running proxy
	"stado host keeper":      true, // the long-running connection keeper
	"stado completion":       true, // prints the shell script itself
	"stado __complete":       true, // prints candidates one a line, for the shell
	"stado __man":            true, // writes the pages into --dir
}

func walk(prefix string, cmds []*ucli.Command, fn func(path string, c *ucli.Command)) {
	for _, c := range cmds {
		// A hidden command without an action is a placeholder another
		// change is filling in (release_rollout.go); it is not yet a command.
		if c.Name == "help" || (c.Hidden && c.Action == nil && len(c.Subcommands) == 0) {
			continue
		}
		path := prefix + " " + c.Name
		fn(path, c)
		walk(path, c.Subcommands, fn)
	}
}

func hasFlag(c *ucli.Command, name string) bool {
	for _, f := range c.Flags {
		for _, n := range f.Names() {
			if n == name {
				return true
			}
		}
	}
	return false
}

func TestEveryCommandHasUsageExampleAndSharedFlags(t *testing.T) {
	env := NewEnv(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	app := NewApp(env)
	n := 0
	walk("stado", app.Commands, func(path string, c *ucli.Command) {
		n++
		if c.Usage == "" {
			t.Errorf("%s: no usage text", path)
		}
		if len(c.Subcommands) > 0 {
			return
		}
		if !strings.Contains(c.UsageText, "example:") {
			t.Errorf("%s: help has no example: line", path)
		}
		if !hasFlag(c, "store") {
			t.Errorf("%s: no shared --store flag", path)
		}
		if !reportingExempt[path] && !hasFlag(c, "json") {
			t.Errorf("%s: reports but has no --json flag", path)
		}
	})
	if n == 0 {
		t.Fatal("no commands walked")
	}
}

func TestHelpOfEveryCommandPrintsWithoutError(t *testing.T) {
	env := NewEnv(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	walk("stado", NewApp(env).Commands, func(path string, c *ucli.Command) {
		var out, errOut bytes.Buffer
		e := NewEnv(strings.NewReader(""), &out, &errOut)
		args := append(strings.Fields(path), "--help")
		if code := Run(t.Context(), e, args); code != 0 {
			t.Errorf("%s --help: exit %d: %s", path, code, errOut.String())
		}
		if !strings.Contains(out.String(), c.Name) {
			t.Errorf("%s --help printed no usage: %q", path, out.String())
		}
	})
}

func TestUnknownCommandIsUsageError(t *testing.T) {
	var out, errOut bytes.Buffer
	e := NewEnv(strings.NewReader(""), &out, &errOut)
	if code := Run(t.Context(), e, []string{"stado", "no-such-command"}); code != ExitUsage {
		t.Fatalf("exit %d, want %d (stderr %q)", code, ExitUsage, errOut.String())
	}
}

// TestHelpShowsOneDefaultPerFlag walks every command's help and refuses a flag
// line that states its default twice, or urfave's "(default: 0…)" beside a
// usage that gives 0 a meaning of its own: the help must tell one true default.
func TestHelpShowsOneDefaultPerFlag(t *testing.T) {
	env := NewEnv(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	paths := []string{"stado"}
	walk("stado", NewApp(env).Commands, func(path string, c *ucli.Command) { paths = append(paths, path) })
	for _, path := range paths {
		var out, errOut bytes.Buffer
		e := NewEnv(strings.NewReader(""), &out, &errOut)
		if code := Run(t.Context(), e, append(strings.Fields(path), "--help")); code != 0 {
			t.Fatalf("%s --help: exit %d: %s", path, code, errOut.String())
		}
		for _, line := range strings.Split(out.String(), "\n") {
			if !strings.HasPrefix(strings.TrimSpace(line), "-") {
				continue
			}
			if n := strings.Count(line, "default"); n > 1 {
				t.Errorf("%s: flag line names %d defaults: %s", path, n, strings.TrimSpace(line))
			} else if strings.Contains(line, "0:") && (strings.Contains(line, "(default: 0") || strings.Contains(line, "(default: -1")) {
				// the usage gives 0 its own meaning, so urfave's zero is not the default
				t.Errorf("%s: flag line shows urfave's zero as its default: %s", path, strings.TrimSpace(line))
			}
		}
	}
}

// TestHostChannelHelpListsEveryVerbTheGrammarAccepts compares `host channel
// --help` with the grammar's verb list, so a new verb cannot go unlisted.
func TestHostChannelHelpListsEveryVerbTheGrammarAccepts(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := Run(t.Context(), NewEnv(strings.NewReader(""), &out, &errOut), []string{"stado", "host", "channel", "--help"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	words := map[string]bool{}
	for _, w := range strings.FieldsFunc(out.String(), func(r rune) bool { return r == ' ' || r == '\n' || r == '.' || r == ':' }) {
		words[w] = true
	}
	for _, v := range channel.Verbs {
		if !words[string(v)] {
			t.Errorf("host channel --help does not list the verb %q", v)
		}
	}
}

// printsUnitDiff lists the commands whose dry run prints a unit diff
// (fleet.EnsureResult.Diff); no other --dry-run may promise one.
var printsUnitDiff = map[string]bool{"stado service ensure": true}

// TestDryRunHelpPromisesADiffOnlyWhereTheDryRunPrintsOne walks every command
// with --dry-run and refuses a usage that promises a diff it never prints.
func TestDryRunHelpPromisesADiffOnlyWhereTheDryRunPrintsOne(t *testing.T) {
	env := NewEnv(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	walk("stado", NewApp(env).Commands, func(path string, c *ucli.Command) {
		for _, f := range c.Flags {
			if f.Names()[0] != "dry-run" {
				continue
			}
			usage := f.(*ucli.BoolFlag).Usage
			if strings.Contains(usage, "unit diff") != printsUnitDiff[path] {
				t.Errorf("%s: --dry-run says %q, but its dry run prints a unit diff: %v", path, usage, printsUnitDiff[path])
			}
		}
	})
}
