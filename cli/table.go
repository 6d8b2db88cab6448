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

// printTable writes rows under header in aligned columns; with a width,
// the last column is cut to fit it (at least 10 characters are kept).
//
// Every cell is escaped (escapeText): a cell is one line, whatever it holds.
func printTable(w io.Writer, width int, header []string, rows [][]string) {
	header, rows = escapeCells(header), escapeRows(rows)
	widths := make([]int, len(header))
	for _, r := range append([][]string{header}, rows...) {
		for i := 0; i < len(widths)-1 && i < len(r); i++ {
			widths[i] = max(widths[i], utf8.RuneCountInString(r[i]))
		}
	}
	for _, r := range append([][]string{header}, rows...) {
		var b strings.Builder
		for i := range widths[:len(widths)-1] {
			fmt.Fprintf(&b, "%-*s  ", widths[i], cell(r, i))
		}
		last := []rune(cell(r, len(widths)-1))
		if room := max(width-utf8.RuneCountInString(b.String()), 10); width > 0 && len(last) > room {
			last = append(last[:room-1], '…')
		}
		fmt.Fprintln(w, strings.TrimRight(b.String()+string(last), " "))
	}
}

func cell(r []string, i int) string {
	if i < len(r) {
		return r[i]
	}
	return ""
}

func escapeCells(r []string) []string {
	out := make([]string, len(r))
	for i, c := range r {
		out[i] = escapeText(c)
	}
	return out
}

func escapeRows(rows [][]string) [][]string {
	out := make([][]string, len(rows))
	for i, r := range rows {
		out[i] = escapeCells(r)
	}
	return out
}
