// Package completion answers shell completion for stado: the words a
// command line may continue with (commands, flags, and the registry's
// host, service and product names where a flag or argument takes one),
// and the bash, zsh and fish scripts that ask for them by calling
// `stado __complete -- WORDS...`. It reads only the urfave/cli tree it is
// handed and the names its caller supplies; it imports no stado package,
// so it never opens a store or a host itself.
package completion

import (
	"fmt"
	"sort"
	"strings"

	ucli "github.com/urfave/cli/v2"
)

// Names are the registry's names completion offers.
type Names struct {
	Hosts    []string
	Services []string
	Products []string
}

// kind is which of Names a flag or argument takes.
type kind int

const (
	none kind = iota
	hosts
	services
	products
)

// flagKinds: the flags whose value is a registry name, by flag name.
var flagKinds = map[string]kind{"host": hosts, "target": hosts, "service": services, "product": products}

// argKind reads a positional argument's placeholder as the help writes it
// (SERVICE, NAME, HOST, PRODUCT).
func argKind(placeholder string) kind {
	switch placeholder {
	case "SERVICE", "NAME":
		return services
	case "HOST", "TARGET":
		return hosts
	case "PRODUCT":
		return products
	}
	return none
}

// Complete returns the candidates for the last of words, the command line
// after the program's name (the last word is the one being typed, "" when
// the cursor stands after a space). names is called at most once, and only
// when a registry name is wanted; the candidates keep their prefix and are
// sorted. Safe for concurrent use if names is.
func Complete(app *ucli.App, words []string, names func() Names) []string {
	if len(words) == 0 {
		words = []string{""}
	}
	cur := words[len(words)-1]
	cmds, flags := app.Commands, app.Flags
	var leaf *ucli.Command
	nargs := 0
	var valueOf ucli.Flag // the flag the current word is the value of
	for i := 0; i < len(words)-1; i++ {
		w := words[i]
		valueOf = nil
		if strings.HasPrefix(w, "-") && w != "-" && w != "--" {
			f := findFlag(flags, w)
			if f != nil && takesValue(f) && !strings.Contains(w, "=") {
				if i == len(words)-2 {
					valueOf = f
				}
				i++
			}
			continue
		}
		if leaf == nil || len(leaf.Subcommands) > 0 {
			if c := findCommand(cmds, w); c != nil {
				leaf, cmds, flags = c, c.Subcommands, c.Flags
				continue
			}
		}
		nargs++
	}
	if valueOf != nil {
		return filter(pick(flagKinds[valueOf.Names()[0]], names), cur)
	}
	if strings.HasPrefix(cur, "-") {
		var out []string
		for _, f := range flags {
			out = append(out, "--"+f.Names()[0])
		}
		return filter(out, cur)
	}
	if leaf == nil || len(leaf.Subcommands) > 0 {
		var out []string
		for _, c := range cmds {
			if !c.Hidden && c.Name != "help" {
				out = append(out, c.Name)
			}
		}
		return filter(out, cur)
	}
	args := placeholders(leaf)
	if nargs < len(args) {
		return filter(pick(argKind(args[nargs]), names), cur)
	}
	return nil
}

// placeholders are a leaf's positional arguments as its help names them:
// ArgsUsage when set, else the words after the command's path on the
// first line of its UsageText, up to the first option.
func placeholders(c *ucli.Command) []string {
	line := c.ArgsUsage
	if line == "" {
		line, _, _ = strings.Cut(c.UsageText, "\n")
		words := strings.Fields(line)
		for i, w := range words {
			if w == c.Name {
				line = strings.Join(words[i+1:], " ")
				break
			}
		}
	}
	var out []string
	for _, w := range strings.Fields(line) {
		if strings.HasPrefix(w, "-") || strings.HasPrefix(w, "(") || strings.HasPrefix(w, "[-") {
			break
		}
		w = strings.Trim(w, "[]")
		w, _, _ = strings.Cut(w, "|")
		out = append(out, w)
	}
	return out
}

func pick(k kind, names func() Names) []string {
	if k == none || names == nil {
		return nil
	}
	n := names()
	switch k {
	case hosts:
		return n.Hosts
	case services:
		return n.Services
	default:
		return n.Products
	}
}

func filter(cands []string, prefix string) []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range cands {
		if strings.HasPrefix(c, prefix) && !seen[c] && !strings.ContainsAny(c, " \t\n") {
			seen[c] = true
			out = append(out, c)
		}
	}
	sort.Strings(out)
	return out
}

func findCommand(cmds []*ucli.Command, name string) *ucli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

func findFlag(flags []ucli.Flag, word string) ucli.Flag {
	name, _, _ := strings.Cut(strings.TrimLeft(word, "-"), "=")
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}

func takesValue(f ucli.Flag) bool {
	d, ok := f.(ucli.DocGenerationFlag)
	return ok && d.TakesValue()
}

// Shells are the shells Script writes for.
var Shells = []string{"bash", "zsh", "fish"}

// Script returns the completion script of shell for the program prog:
// each asks `prog __complete -- WORDS...` for its candidates and offers
// nothing when that fails. An unknown shell is an error naming Shells.
func Script(shell, prog string) (string, error) {
	switch shell {
	case "bash":
		return fmt.Sprintf(`# bash completion for %[1]s; source it or install it as
# /usr/share/bash-completion/completions/%[1]s
_%[1]s_complete() {
    local IFS=$'\n'
    COMPREPLY=($(%[1]s __complete -- "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
}
complete -o default -F _%[1]s_complete %[1]s
`, prog), nil
	case "zsh":
		return fmt.Sprintf(`#compdef %[1]s
# zsh completion for %[1]s; install it as _%[1]s in a directory of $fpath
_%[1]s() {
    local -a cands
    cands=("${(@f)$(%[1]s __complete -- "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    cands=(${cands:#})
    if (( ${#cands} )); then
        compadd -a cands
    else
        _files
    fi
}
if [ "$funcstack[1]" = "_%[1]s" ]; then
    _%[1]s "$@"
else
    compdef _%[1]s %[1]s
fi
`, prog), nil
	case "fish":
		return fmt.Sprintf(`# fish completion for %[1]s; install it as %[1]s.fish in a
# directory of $fish_complete_path
function __%[1]s_complete
    set -l words (commandline -opc) (commandline -ct)
    %[1]s __complete -- $words[2..-1] 2>/dev/null
end
complete -c %[1]s -f -a '(__%[1]s_complete)'
`, prog), nil
	}
	return "", fmt.Errorf("no completion for shell %q: want one of %s", shell, strings.Join(Shells, ", "))
}
