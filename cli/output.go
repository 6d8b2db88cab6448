package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The printer layer. A command builds its result and hands it to emit once:
// under --json stdout gets exactly one JSON document, the result with its
// kind as the first field; otherwise the command's text form, written
// through a *text that never prints a document as raw JSON. Errors are not
// results: Run prints them (printError).

// emit prints doc as the one JSON document of kind (doc must encode as a
// JSON object without a kind field of its own, or be nil), or runs human. It
// returns the first error writing stdout.
func emit(env *Env, kind string, doc any, human func(t *text)) error {
	if env.JSON {
		return printJSONWithKind(env, kind, doc)
	}
	t := &text{w: env.Stdout, width: terminalWidth(env)}
	human(t)
	return t.err
}

// printJSONWithKind writes doc, indented as printJSON does, with "kind" as
// its first field. It encodes doc once and indents it once, with no copy
// of the whole document in between: a fleet-size list is megabytes.
func printJSONWithKind(env *Env, kind string, doc any) error {
	b, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("encode %s: %w", kind, err)
	}
	if string(b) == "null" {
		b = []byte("{}")
	}
	if len(b) < 2 || b[0] != '{' {
		return fmt.Errorf("encode %s: not a JSON object", kind)
	}
	k, _ := json.Marshal(kind)
	// Indentation roughly doubles a fleet-size list: one allocation.
	out := make([]byte, 0, 2*len(b)+len(k)+32)
	out = append(out, "{\n  \"kind\": "...)
	out = append(out, k...)
	if string(b) == "{}" {
		out = append(out, "\n}\n"...)
	} else {
		out = append(out, ",\n  "...)
		// b without its opening brace: its fields follow kind's.
		out = indentJSON(out, b[1:], 1)
		out = append(out, '\n')
	}
	_, err = env.Stdout.Write(out)
	return err
}

// indentJSON appends src, compact JSON as json.Marshal writes it, to dst
// indented by two spaces per level from depth, exactly as json.Indent
// with prefix "" and indent "  " would, in one pass and without
// re-validating what the encoder just wrote (json.Indent's scanner costs
// more than the encoding on a fleet-size list). src may start inside an
// object or array at depth.
func indentJSON(dst, src []byte, depth int) []byte {
	newline := func() {
		dst = append(dst, '\n')
		for i := 0; i < depth; i++ {
			dst = append(dst, ' ', ' ')
		}
	}
	inString := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		if inString {
			dst = append(dst, c)
			switch c {
			case '\\':
				i++
				if i < len(src) {
					dst = append(dst, src[i])
				}
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
			dst = append(dst, c)
		case '{', '[':
			dst = append(dst, c)
			if i+1 < len(src) && (src[i+1] == '}' || src[i+1] == ']') {
				dst = append(dst, src[i+1])
				i++
				continue
			}
			depth++
			newline()
		case '}', ']':
			depth--
			newline()
			dst = append(dst, c)
		case ',':
			dst = append(dst, c)
			newline()
		case ':':
			dst = append(dst, ':', ' ')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// withKind encodes doc with "kind" as its first field.
func withKind(kind string, doc any) ([]byte, error) {
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", kind, err)
	}
	if string(b) == "null" {
		b = []byte("{}")
	}
	if len(b) < 2 || b[0] != '{' {
		return nil, fmt.Errorf("encode %s: not a JSON object", kind)
	}
	k, _ := json.Marshal(kind)
	out := append([]byte(`{"kind":`), k...)
	if !bytes.Equal(b, []byte("{}")) {
		out = append(out, ',')
	}
	return append(out, b[1:]...), nil
}

// text is the human form of a result: lines and aligned tables, sized to
// the terminal. It keeps the first write error.
//
// Text carries words from hosts and services (beacon sentences, stderr
// lines, answer bodies, unit names, refusal messages) that a terminal must
// not obey: every value it prints is escaped (escapeText), so no value can
// move the cursor, clear the screen or start a line of its own. The JSON
// form is never escaped: it carries each value exactly.
type text struct {
	w     io.Writer
	width int
	err   error
}

// Write is the last guard: control characters other than the newline and
// tab the layer itself writes are escaped.
func (t *text) Write(p []byte) (int, error) {
	if t.err != nil {
		return 0, t.err
	}
	q := p
	if needsEscape(string(p), true) {
		q = []byte(escapeWith(string(p), true))
	}
	_, err := t.w.Write(q)
	t.err = err
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// f writes one formatted piece of text; every string, error or Stringer
// argument is escaped, so only the format itself starts lines.
func (t *text) f(format string, args ...any) {
	for i, a := range args {
		switch v := a.(type) {
		case string:
			args[i] = escapeText(v)
		case error:
			args[i] = escapeText(v.Error())
		case fmt.Stringer:
			args[i] = escapeText(v.String())
		}
	}
	fmt.Fprintf(t, format, args...)
}

// lines writes each line of a result's text form.
func (t *text) lines(ls []string) { t.indented("", ls) }

// indented writes each line after indent.
func (t *text) indented(indent string, ls []string) {
	for _, l := range ls {
		t.f("%s%s\n", indent, l)
	}
}

// table writes rows under header in aligned columns (table.go).
func (t *text) table(header []string, rows [][]string) { printTable(t, t.width, header, rows) }

// escapeText makes s safe to print on a terminal as one line: newlines,
// carriage returns, tabs, every other control character (C0, DEL, C1),
// bidirectional and other format characters, and bytes that are not UTF-8
// are written as Go escapes (\n, \x1b, \u202e). Printable text, non-ASCII
// letters included, is left as it is.
func escapeText(s string) string {
	if !needsEscape(s, false) {
		return s
	}
	return escapeWith(s, false)
}

// escapeLines escapes each line of a multi-line message (a validation
// error lists one violation a line), keeping its line breaks.
func escapeLines(s string) string {
	if !needsEscape(s, true) && !strings.ContainsFunc(s, func(r rune) bool { return unicode.Is(unicode.Cf, r) }) {
		return s
	}
	ls := strings.Split(s, "\n")
	for i, l := range ls {
		ls[i] = escapeText(l)
	}
	return strings.Join(ls, "\n")
}

// needsEscape reports whether escapeWith would change s; layout keeps the
// newline and the tab.
func needsEscape(s string, layout bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 {
			return needsEscapeSlow(s[i:], layout)
		}
		if (c < 0x20 || c == 0x7f) && !(layout && (c == '\n' || c == '\t')) {
			return true
		}
	}
	return false
}

func needsEscapeSlow(s string, layout bool) bool {
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		if r == utf8.RuneError && n == 1 || unsafeRune(r, layout) {
			return true
		}
		s = s[n:]
	}
	return false
}

func escapeWith(s string, layout bool) string {
	const hex = "0123456789abcdef"
	b := make([]byte, 0, len(s)+16)
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && n == 1:
			b = append(b, '\\', 'x', hex[s[0]>>4], hex[s[0]&15])
		case unsafeRune(r, layout):
			q := strconv.QuoteRuneToASCII(r)
			b = append(b, q[1:len(q)-1]...)
		default:
			b = append(b, s[:n]...)
		}
		s = s[n:]
	}
	return string(b)
}

// unsafeRune: control characters and format characters (bidirectional
// overrides, zero-width joiners), which a terminal obeys or hides. layout
// is the guard on raw writes (a document printed as itself, such as
// registry pull's): it keeps the newline and the tab, and the format
// characters a value may hold, so the text stays the document.
func unsafeRune(r rune, layout bool) bool {
	if layout {
		return r != '\n' && r != '\t' && unicode.IsControl(r)
	}
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
}
