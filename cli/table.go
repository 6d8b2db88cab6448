package cli

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/term"
)

// terminalWidth is the width text tables are sized to: $COLUMNS, else the
// terminal's, else 120.
func terminalWidth(env *Env) int {
	if c, err := strconv.Atoi(env.Getenv("COLUMNS")); err == nil && c > 20 {
		return c
	}
	if f, ok := env.Stdout.(*os.File); ok {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 20 {
			return w
		}
	}
	return 120
}

// printTable writes rows under header in aligned columns; the last column
// is cut to fit width.
func printTable(w io.Writer, width int, header []string, rows [][]string) {
	cols := len(header)
	widths := make([]int, cols)
	for i, h := range header {
		widths[i] = utf8.RuneCountInString(h)
	}
	for _, r := range rows {
		for i := 0; i < cols && i < len(r); i++ {
			if n := utf8.RuneCountInString(r[i]); n > widths[i] && i < cols-1 {
				widths[i] = n
			}
		}
	}
	line := func(r []string) {
		var b strings.Builder
		used := 0
		for i := 0; i < cols; i++ {
			cell := ""
			if i < len(r) {
				cell = r[i]
			}
			if i == cols-1 {
				room := width - used
				if room < 10 {
					room = 10
				}
				if utf8.RuneCountInString(cell) > room {
					cell = string([]rune(cell)[:room-1]) + "…"
				}
				b.WriteString(cell)
				break
			}
			fmt.Fprintf(&b, "%-*s  ", widths[i], cell)
			used += widths[i] + 2
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	line(header)
	for _, r := range rows {
		line(r)
	}
}
