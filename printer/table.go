package printer

import (
	"io"
	"unicode/utf8"
)

// printTable writes rows under header in aligned columns; with a width,
// the last column is cut to fit it (at least 10 characters are kept).
//
// Every cell is escaped (Escape): a cell is one line, whatever it holds.
// The cells of rows are replaced by their escaped form.
func printTable(w io.Writer, width int, header []string, rows [][]string) {
	header = escapeCells(header)
	for _, r := range rows {
		for i, c := range r {
			r[i] = Escape(c)
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
		w.Write(line) //nolint:errcheck // a *Text keeps its first error
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
		out[i] = Escape(c)
	}
	return out
}
