package cli

import (
	"os"
	"strconv"

	"golang.org/x/term"
)

// terminalWidth is the width text tables are cut to: $COLUMNS, else the
// terminal's; 0 (no cut) when stdout is a file or a pipe, so nothing a
// script reads is lost.
func terminalWidth(env *Env) int {
	if c, err := strconv.Atoi(env.Getenv("COLUMNS")); err == nil && c > 20 {
		return c
	}
	if f, ok := env.Stdout.(*os.File); ok {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 20 {
			return w
		}
	}
	return 0
}
