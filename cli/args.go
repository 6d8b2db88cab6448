package cli

import (
	"strings"

	ucli "github.com/urfave/cli/v2"
)

// interspersed moves the flags written after a leaf command's positional
// arguments in front of them, so `stado service logs brama --host h2
// --lines 50` parses like `stado service logs --host h2 --lines 50 brama`.
// urfave/cli v2 stops reading flags at the first argument; operators do
// not. Everything after "--" stays positional.
func interspersed(app *ucli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	out := []string{args[0]}
	cmds, flags := app.Commands, app.Flags
	i := 1
	// Walk the command path, keeping flags written between its words.
	for i < len(args) {
		tok := args[i]
		if tok == "--" {
			return append(out, args[i:]...)
		}
		if strings.HasPrefix(tok, "-") && tok != "-" {
			out = append(out, tok)
			if takesValue(flags, tok) && i+1 < len(args) {
				out = append(out, args[i+1])
				i++
			}
			i++
			continue
		}
		sub := findCommand(cmds, tok)
		if sub == nil {
			break
		}
		out = append(out, tok)
		cmds, flags = sub.Subcommands, sub.Flags
		i++
	}
	// The rest are the leaf's arguments: flags first, then positionals.
	var fl, pos []string
	for i < len(args) {
		tok := args[i]
		if tok == "--" {
			pos = append(pos, args[i:]...)
			break
		}
		if strings.HasPrefix(tok, "-") && tok != "-" && isFlag(flags, tok) {
			fl = append(fl, tok)
			if takesValue(flags, tok) && i+1 < len(args) {
				fl = append(fl, args[i+1])
				i++
			}
		} else {
			pos = append(pos, tok)
		}
		i++
	}
	out = append(out, fl...)
	return append(out, pos...)
}

func findCommand(cmds []*ucli.Command, name string) *ucli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

func flagName(tok string) (string, bool) {
	name := strings.TrimLeft(tok, "-")
	name, _, hasValue := strings.Cut(name, "=")
	return name, hasValue
}

func lookupFlag(flags []ucli.Flag, tok string) ucli.Flag {
	name, _ := flagName(tok)
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}

func isFlag(flags []ucli.Flag, tok string) bool {
	name, _ := flagName(tok)
	return lookupFlag(flags, tok) != nil || name == "help" || name == "h"
}

// takesValue says whether tok is a flag whose value is the next word.
func takesValue(flags []ucli.Flag, tok string) bool {
	if _, inline := flagName(tok); inline {
		return false
	}
	f := lookupFlag(flags, tok)
	if f == nil {
		return false
	}
	if v, ok := f.(ucli.DocGenerationFlag); ok {
		return v.TakesValue()
	}
	return false
}
