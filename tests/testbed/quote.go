package testbed

import (
	"errors"
	"strings"
)

// ShellQuote returns s as one word for a POSIX shell: wrapped in single
// quotes, each embedded single quote closed, escaped and reopened (the four
// characters quote, backslash, quote, quote). The remote shell of an
// ssh command reads it back as exactly s, whatever s holds (spaces, $, `,
// newlines, globs, a leading dash).
func ShellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// errNUL refuses an argument no shell word can carry.
var errNUL = errors.New("argument contains a NUL byte")

// remoteCommand joins argv into the command string ssh hands to the remote
// shell, each argument quoted on its own.
func remoteCommand(argv []string) (string, error) {
	if len(argv) == 0 {
		return "", errors.New("empty argv")
	}
	words := make([]string, len(argv))
	for i, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return "", errNUL
		}
		words[i] = ShellQuote(a)
	}
	return strings.Join(words, " "), nil
}
