package cli

import (
	"strings"

	ucli "github.com/urfave/cli/v2"
)

// interspersed moves the flags written after a leaf command's positional
// arguments in front of them, so `stado service logs brama --host h2
// --lines 50` parses like `stado service logs --host h2 --lines 50 brama`.
// urfave/cli v2 stops reading flags at the first argument; operators do
// not. Everything after "--" stays positional; a dash word the command does
// not know moves with the flags, so urfave refuses it by name.
func interspersed(app *ucli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	out := []string{args[0]}
	cmds, flags := app.Commands, app.Flags
	i := 1
	// Walk the command path, keeping flags written between its words.
	for ; i < len(args) && args[i] != "--"; i++ {
		tok := args[i]
		if tok == "--version" && findCommand(cmds, "version") != nil { // `stado --version` is `stado version`
			tok = "version"
		}
		if isDash(tok) {
			out = append(out, tok)
			if takesValue(flags, tok) && i+1 < len(args) {
				i++
				out = append(out, args[i])
			}
			continue
		}
		sub := findCommand(cmds, tok)
		if sub == nil {
			break
		}
		out = append(out, tok)
		cmds, flags = sub.Subcommands, sub.Flags
	}
	// The rest are the leaf's arguments: flags first, then positionals.
	var fl, pos []string
	for ; i < len(args); i++ {
		tok := args[i]
		if tok == "--" {
			pos = append(pos, args[i:]...)
			break
		}
		if !isDash(tok) {
			pos = append(pos, tok)
			continue
		}
		if !isFlag(flags, tok) {
			// an unknown flag goes first too, so urfave refuses it by
			// name instead of counting it as an argument
			fl = append(fl, tok)
			continue
		}
		fl = append(fl, tok)
		if takesValue(flags, tok) && i+1 < len(args) {
			i++
			fl = append(fl, args[i])
		}
	}
	return append(append(out, fl...), pos...)
}

func isDash(tok string) bool { return strings.HasPrefix(tok, "-") && tok != "-" }

func findCommand(cmds []*ucli.Command, name string) *ucli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// lookupFlag finds the flag tok (-name, --name or --name=value) names.
func lookupFlag(flags []ucli.Flag, tok string) ucli.Flag {
	name, _, _ := strings.Cut(strings.TrimLeft(tok, "-"), "=")
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
	name, _, _ := strings.Cut(strings.TrimLeft(tok, "-"), "=")
	return lookupFlag(flags, tok) != nil || name == "help" || name == "h"
}

// takesValue says whether tok is a flag whose value is the next word.
func takesValue(flags []ucli.Flag, tok string) bool {
	f, ok := lookupFlag(flags, tok).(ucli.DocGenerationFlag)
	return ok && !strings.Contains(tok, "=") && f.TakesValue()
}
