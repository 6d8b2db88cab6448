package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/completion"
	"github.com/wisent/stado/manpage"
	"github.com/wisent/stado/safefile"
)

// completeBound bounds the store read behind one completion: a shell
// waits on it, so a slow store offers nothing rather than hanging.
const completeBound = 2 * time.Second

func newCompletionCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:      "completion",
		Usage:     "print the shell completion script for bash, zsh or fish",
		ArgsUsage: "SHELL",
		UsageText: "stado completion bash|zsh|fish\n\n" +
			"The script completes commands and flags, and host, service and product names\n" +
			"from the registry (the validated copy this user last read; never over SSH).\n\n" +
			"example:\n   source <(stado completion bash)\n   stado completion fish > ~/.config/fish/completions/stado.fish",
		Action: func(c *ucli.Context) error {
			shell, err := oneArg(c, "SHELL")
			if err != nil {
				return err
			}
			s, err := completion.Script(shell, "stado")
			if err != nil {
				return usagef("%v", err)
			}
			_, err = fmt.Fprint(env.Stdout, s)
			return err
		},
	}, false)
}

func newCompleteCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:      "__complete",
		Hidden:    true,
		Usage:     "print the completion candidates of a command line (the completion scripts call it)",
		UsageText: "stado __complete -- WORDS...\n\nexample:\n   stado __complete -- service ensure ''",
		Action: func(c *ucli.Context) error {
			words := c.Args().Slice()
			if len(words) > 0 && words[0] == "--" {
				words = words[1:]
			}
			for _, w := range completion.Complete(NewApp(env), words, func() completion.Names { return registryNames(c.Context, env, words) }) {
				fmt.Fprintln(env.Stdout, w)
			}
			return nil
		},
	}, false)
}

// registryNames reads the names completion offers from the registry the
// command line (or the environment) names, within completeBound; any
// failure offers none.
func registryNames(ctx context.Context, env *Env, words []string) completion.Names {
	for i, w := range words {
		if w == "--store" && i+1 < len(words)-1 {
			env.StoreURL = words[i+1]
		}
	}
	// A completion reads; it never creates the file store a URL names.
	if dir, ok := strings.CutPrefix(env.StoreURL, "file://"); ok {
		if _, err := os.Stat(dir); err != nil {
			return completion.Names{}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, completeBound)
	defer cancel()
	st, err := openStore(ctx, env)
	if err != nil {
		return completion.Names{}
	}
	defer st.Close()
	doc, _, err := beacon.LoadValidated(ctx, st, beacon.UserRegistryCache(env.Getenv, env.StoreURL))
	if err != nil {
		return completion.Names{}
	}
	var n completion.Names
	for p := range doc.Releases {
		n.Products = append(n.Products, p)
	}
	for _, t := range doc.Targets {
		n.Hosts = append(n.Hosts, t.Name)
		for _, s := range t.Services {
			n.Services = append(n.Services, s.Name)
		}
		for p := range t.Releases {
			n.Products = append(n.Products, p)
		}
	}
	return n
}

func newManCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:      "__man",
		Hidden:    true,
		Usage:     "write the manual pages of the command tree into a directory (make install and make package call it)",
		UsageText: "stado __man --dir DIR\n\nexample:\n   stado __man --dir build/man",
		Flags:     []ucli.Flag{&ucli.StringFlag{Name: "dir", Usage: "directory to write stado.1, stado-GROUP.1, ... into"}},
		Action: func(c *ucli.Context) error {
			if err := needFlags(c, "dir"); err != nil {
				return err
			}
			if err := os.MkdirAll(c.String("dir"), 0o755); err != nil {
				return err
			}
			for _, p := range manpage.Render(NewApp(env), Version) {
				if err := safefile.Write(filepath.Join(c.String("dir"), p.File()), p.Roff, 0o644); err != nil {
					return err
				}
			}
			return nil
		},
	}, false)
}
