package cli

import (
	"io"
	"os"
	"strconv"
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
// The cells of rows are replaced by their escaped form.
func printTable(w io.Writer, width int, header []string, rows [][]string) {
	header = escapeCells(header)
	for _, r := range rows {
		for i, c := range r {
			r[i] = escapeText(c)
		}
	}
	widths := make([]int, len(header))
	measure := func(r []string) {
		for i := 0; i < len(widths)-1 && i < len(r); i++ {
			widths[i] = max(widths[i], utf8.RuneCountInString(r[i]))
		}
	}
	measure(header)
	for _, r := range rows {
		measure(r)
	}
	var line []byte
	write := func(r []string) {
		line = line[:0]
		runes := 0
		for i := range widths[:len(widths)-1] {
			c := cell(r, i)
			line = append(line, c...)
			pad := widths[i] - utf8.RuneCountInString(c) + 2
			for ; pad > 0; pad-- {
				line = append(line, ' ')
			}
			runes += widths[i] + 2
		}
		last := cell(r, len(widths)-1)
		if room := max(width-runes, 10); width > 0 && utf8.RuneCountInString(last) > room {
			last = string([]rune(last)[:room-1]) + "…"
		}
		line = append(line, last...)
		for len(line) > 0 && line[len(line)-1] == ' ' {
			line = line[:len(line)-1]
		}
		line = append(line, '\n')
		w.Write(line) //nolint:errcheck // a *text keeps its first error
	}
	write(header)
	for _, r := range rows {
		write(r)
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
