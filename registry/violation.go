package registry

import (
	"fmt"
	"strings"

	"github.com/wisent/stado/refusal"
)

// ErrInvalid: a document failed validation; see *ValidationError.
var ErrInvalid error = refusal.NewSentinel(refusal.Validation, "invalid document")

// ValidationError carries every violation found, not only the first.
// It unwraps to ErrInvalid.
type ValidationError struct {
	// Source names what was validated (a file name, "registry"), may be empty.
	Source     string
	Violations []Violation
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	if e.Source != "" {
		b.WriteString(e.Source + ": ")
	}
	fmt.Fprintf(&b, "%d violation(s)", len(e.Violations))
	for _, v := range e.Violations {
		b.WriteString("\n  " + v.String())
	}
	return b.String()
}

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *ValidationError) Unwrap() error { return ErrInvalid }
