package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
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
		b, err := withKind(kind, doc)
		if err != nil {
			return err
		}
		return printJSON(env, json.RawMessage(b))
	}
	t := &text{w: env.Stdout, width: terminalWidth(env)}
	human(t)
	return t.err
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
type text struct {
	w     io.Writer
	width int
	err   error
}

func (t *text) Write(p []byte) (int, error) {
	if t.err != nil {
		return 0, t.err
	}
	n, err := t.w.Write(p)
	t.err = err
	return n, err
}

// f writes one formatted piece of text.
func (t *text) f(format string, args ...any) { fmt.Fprintf(t, format, args...) }

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
