package cli

import (
	"bufio"
	"io"

	"github.com/wisent/stado/printer"
)

// The printer layer (package printer) as commands use it. A command builds
// its result and hands it to emit once: under --json stdout gets exactly
// one JSON document, the result with its kind as the first field; otherwise
// the command's text form, written through a *text that never prints a
// document as raw JSON. Errors are not results: Run prints them.

// emit prints doc as the one JSON document of kind (doc must encode as a
// JSON object without a kind field of its own, or be nil), or runs human. It
// returns the first error writing stdout. Either form goes through one
// buffer: a fleet-size table or list is written in large pieces, not a
// write per line.
func emit(env *Env, kind string, doc any, human func(t *text)) error {
	w := bufio.NewWriterSize(env.Stdout, 64<<10)
	if env.JSON {
		if err := printer.JSON(w, kind, doc); err != nil {
			return err
		}
		return w.Flush()
	}
	t := newText(w, terminalWidth(env))
	human(t)
	if t.Err() != nil {
		return t.Err()
	}
	return w.Flush()
}

// text is a command's human form: printer.Text with the short verbs the
// commands write in.
type text struct{ *printer.Text }

func newText(w io.Writer, width int) *text { return &text{printer.New(w, width)} }

func (t *text) f(format string, args ...any)           { t.F(format, args...) }
func (t *text) lines(ls []string)                      { t.Lines(ls) }
func (t *text) indented(indent string, ls []string)    { t.Indented(indent, ls) }
func (t *text) table(header []string, rows [][]string) { t.Table(header, rows) }
