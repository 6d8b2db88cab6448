package units

import (
	"fmt"
	"strings"
)

// EscapeSpecifiers doubles every '%' so systemd reads it literally instead of
// expanding a specifier.
func EscapeSpecifiers(s string) string { return strings.ReplaceAll(s, "%", "%%") }

// QuoteExecArg writes one argument of an ExecStart= line so systemd reads it
// back as exactly a: '%' and '$' are doubled (no specifier, no variable
// expansion), and an argument that is empty or holds whitespace, quotes,
// backslashes, ';' or control characters is double-quoted with C escapes.
func QuoteExecArg(a string) string {
	a = strings.ReplaceAll(a, "$", "$$")
	a = EscapeSpecifiers(a)
	if a != "" && !strings.ContainsFunc(a, needsQuoting) {
		return a
	}
	return `"` + cEscape(a) + `"`
}

// QuoteEnvAssignment writes KEY=VALUE as one quoted word of an Environment=
// line. '%' is doubled; '$' stays as is, because systemd does not expand
// variables in Environment=.
func QuoteEnvAssignment(key, value string) string {
	return `"` + cEscape(EscapeSpecifiers(key+"="+value)) + `"`
}

func needsQuoting(r rune) bool {
	switch r {
	case ' ', '\t', '"', '\'', '\\', ';':
		return true
	}
	return r < 0x20 || r == 0x7f
}

// cEscape escapes what a double-quoted systemd word needs: backslash,
// double quote and control characters.
func cEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '"':
			b.WriteString(`\"`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// word is one word extracted from a systemd value, with what it held raw.
type word struct {
	text       string // after unquoting and unescaping
	raw        string // as written
	specifiers []string
	variables  bool // an unescaped $ was met outside ':' mode
}

// splitWords splits a value into words the way systemd's extract_first_word
// does with unquoting and C unescaping. Specifiers ('%x') are kept verbatim in
// text and listed; '%%' becomes '%'. With dollar, "$$" becomes "$" and a lone
// '$' marks the word as using variable expansion. A ';' word on its own is
// returned with raw ";" so callers can see a command separator.
func splitWords(v string, dollar bool) ([]word, error) {
	var out []word
	i := 0
	for {
		for i < len(v) && (v[i] == ' ' || v[i] == '\t') {
			i++
		}
		if i >= len(v) {
			return out, nil
		}
		start := i
		var w word
		var b strings.Builder
		var quote byte
		for i < len(v) {
			c := v[i]
			if quote == 0 && (c == ' ' || c == '\t') {
				break
			}
			switch {
			case quote != 0 && c == quote:
				quote = 0
				i++
			case quote == 0 && (c == '"' || c == '\''):
				quote = c
				i++
			case c == '\\':
				if i+1 >= len(v) {
					return nil, fmt.Errorf("value ends in a lone backslash")
				}
				r, n, err := unescapeAt(v[i+1:])
				if err != nil {
					return nil, err
				}
				b.WriteString(r)
				i += 1 + n
			case c == '%':
				if i+1 >= len(v) {
					return nil, fmt.Errorf("value ends in a lone %%")
				}
				if v[i+1] == '%' {
					b.WriteByte('%')
				} else {
					w.specifiers = append(w.specifiers, v[i:i+2])
					b.WriteString(v[i : i+2])
				}
				i += 2
			case c == '$' && dollar:
				if i+1 < len(v) && v[i+1] == '$' {
					b.WriteByte('$')
					i += 2
				} else {
					w.variables = true
					b.WriteByte('$')
					i++
				}
			default:
				b.WriteByte(c)
				i++
			}
		}
		if quote != 0 {
			return nil, fmt.Errorf("unterminated quote")
		}
		w.text = b.String()
		w.raw = v[start:i]
		out = append(out, w)
	}
}

// unescapeAt reads the C escape whose body starts s (after the backslash)
// and returns its value and how many bytes it used.
func unescapeAt(s string) (string, int, error) {
	switch s[0] {
	case 'a':
		return "\a", 1, nil
	case 'b':
		return "\b", 1, nil
	case 'f':
		return "\f", 1, nil
	case 'n':
		return "\n", 1, nil
	case 'r':
		return "\r", 1, nil
	case 't':
		return "\t", 1, nil
	case 'v':
		return "\v", 1, nil
	case 's':
		return " ", 1, nil
	case '\\', '"', '\'', ' ', ';':
		return s[:1], 1, nil
	case 'x':
		if len(s) < 3 {
			return "", 0, fmt.Errorf("short \\x escape")
		}
		var v byte
		if _, err := fmt.Sscanf(s[1:3], "%02x", &v); err != nil {
			return "", 0, fmt.Errorf("bad \\x escape %q", s[:3])
		}
		return string([]byte{v}), 3, nil
	case 'u', 'U':
		n := 4
		if s[0] == 'U' {
			n = 8
		}
		if len(s) < 1+n {
			return "", 0, fmt.Errorf("short \\%c escape", s[0])
		}
		var v rune
		if _, err := fmt.Sscanf(s[1:1+n], "%x", &v); err != nil {
			return "", 0, fmt.Errorf("bad \\%c escape", s[0])
		}
		return string(v), 1 + n, nil
	}
	if s[0] >= '0' && s[0] <= '7' {
		if len(s) < 3 {
			return "", 0, fmt.Errorf("short octal escape")
		}
		var v byte
		if _, err := fmt.Sscanf(s[:3], "%03o", &v); err != nil {
			return "", 0, fmt.Errorf("bad octal escape %q", s[:3])
		}
		return string([]byte{v}), 3, nil
	}
	return "", 0, fmt.Errorf("unknown escape \\%c", s[0])
}
