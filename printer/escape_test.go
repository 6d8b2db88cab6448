package printer

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// Hostile text from hosts and services (an escape sequence that clears the
// screen, a newline that forges a table row) is escaped on every text path
// of the printer layer; JSON keeps every value exactly.
func TestHostileTextIsEscapedInTextAndExactInJSON(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		// clear screen and home the cursor
		{"escape sequence", "ok\x1b[2J\x1b[H", `ok\x1b[2J\x1b[H`},
		// a newline forging a second row
		{"newline", "503 busy\nh2  brama  active", `503 busy\nh2  brama  active`},
		// a carriage return overwriting the line
		{"carriage return", "failed\rACTIVE", `failed\rACTIVE`},
		// a bidirectional override reversing what follows
		{"bidi override", "unit\u202eecivres", `unit\u202eecivres`},
		// a C1 control (CSI as one code point)
		{"C1 control", "x\u009b2J", `x\u009b2J`},
		// bytes that are not UTF-8
		{"invalid UTF-8", "a\xffb", `a\xffb`},
		// a bell and a backspace
		{"bell and backspace", "a\a\bb", `a\a\bb`},
		// ordinary non-ASCII letters stay as they are
		{"letters", "zażółć gęślą jaźń", "zażółć gęślą jaźń"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Escape(tc.in); got != tc.want {
				t.Errorf("Escape = %q, want %q", got, tc.want)
			}
			// a formatted line
			var out bytes.Buffer
			tx := New(&out, 0)
			tx.F("sentence: %s; cause: %v\n", tc.in, errors.New(tc.in))
			if want := "sentence: " + tc.want + "; cause: " + tc.want + "\n"; out.String() != want {
				t.Errorf("F wrote %q, want %q", out.String(), want)
			}
			// lines and a table
			out.Reset()
			tx.Lines([]string{tc.in})
			tx.Table([]string{"HOST", "DETAIL"}, [][]string{{tc.in, tc.in}})
			if n := strings.Count(out.String(), "\n"); n != 3 {
				t.Errorf("lines and a two-row table wrote %d lines: %q", n, out.String())
			}
			if strings.ContainsAny(out.String(), "\x1b\r\a\b\u009b\u202e") {
				t.Errorf("control characters reached the terminal: %q", out.String())
			}
			// a raw write through the text layer
			out.Reset()
			tx.Write([]byte(tc.in + "\n"))
			if strings.ContainsAny(out.String(), "\x1b\r\a\b\u009b") {
				t.Errorf("raw write let control characters through: %q", out.String())
			}
			// a multi-line message (a final error)
			if got := EscapeLines(tc.in + "\n" + tc.in); strings.ContainsAny(got, "\x1b\r\a\b\u009b\u202e") {
				t.Errorf("EscapeLines let control characters through: %q", got)
			}
			// JSON carries the value exactly
			var stdout bytes.Buffer
			if err := JSON(&stdout, "k", map[string]string{"v": tc.in}); err != nil {
				t.Fatal(err)
			}
			var back map[string]string
			if err := json.Unmarshal(stdout.Bytes(), &back); err != nil {
				t.Fatal(err)
			}
			if want := strings.ToValidUTF8(tc.in, "\ufffd"); back["v"] != want {
				t.Errorf("JSON carried %q, want %q", back["v"], want)
			}
		})
	}
}

// The one-pass indenter writes what json.Indent writes, for every shape
// json.Marshal produces.
func TestIndentJSONWritesWhatJSONIndentWrites(t *testing.T) {
	for _, doc := range []any{
		map[string]any{},
		[]any{},
		map[string]any{"a": 1, "b": []int{}, "c": map[string]any{}, "d": []any{map[string]any{"x": "q\"u{o}t,e:[]\\"}, nil, true, 1.5}},
		map[string]string{"esc": "\x1b[2J\n\u2028<&>"},
		[]any{[]any{[]any{}}, "s", map[string]any{"k": []string{"a", "b"}}},
	} {
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		if err := json.Indent(&want, b, "", "  "); err != nil {
			t.Fatal(err)
		}
		if got := string(indentJSON(nil, b, 0)); got != want.String() {
			t.Errorf("indentJSON(%s) =\n%s\nwant\n%s", b, got, want.String())
		}
	}
}
