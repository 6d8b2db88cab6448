package units

import (
	"bytes"
	"slices"
	"strings"
)

// tailMax is how many bytes of a process's output a Tail keeps.
const tailMax = 2048

// Tail is an io.Writer that keeps the last 2 KiB written to it: the output
// of a repair step or an alert command, kept as evidence without holding
// all of a chatty program's output. The zero value is ready; it is not
// safe for concurrent use (os/exec copies stdout and stderr through one
// goroutine when both are the same writer).
type Tail struct{ b []byte }

func (t *Tail) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > tailMax {
		t.b = slices.Clone(t.b[len(t.b)-tailMax:])
	}
	return len(p), nil
}

// String is what was kept, trimmed, with invalid UTF-8 replaced by "?".
func (t *Tail) String() string { return strings.ToValidUTF8(string(bytes.TrimSpace(t.b)), "?") }

// LastLine is the last line of s once trimmed ("" for blank s).
func LastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
