package cli

import (
	"errors"
	"fmt"
	"github.com/wisent/stado/refusal"

	"github.com/wisent/stado/registry"
)

// Exit codes of every stado command (docs/exit-codes.md).
const (
	ExitOK      = 0 // the command did what it was asked
	ExitFailure = 1 // something failed: transport, host, store I/O
	ExitUsage   = 2 // the command line itself is wrong
	ExitRefused = 3 // refused: invalid input, conflict, not found, unsafe
)

// Refusal is the one refusal type (package refusal): a stable machine code
// that --json carries, a message, an optional hint and details.
type Refusal = refusal.Error

// refuse builds a Refusal with a formatted message.
func refuse(code refusal.Code, format string, args ...any) *Refusal {
	return refusal.New(code, format, args...)
}

// usageError marks a wrong command line (exit 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// exitCode maps every error a command returns to its exit code and the
// machine code --json reports. It is the only place that decides.
func exitCode(err error) (int, string) {
	var (
		ref   *Refusal
		use   *usageError
		val   *registry.ValidationError
		coded refusal.Coded
	)
	switch {
	case err == nil:
		return ExitOK, ""
	case errors.As(err, &use):
		return ExitUsage, "usage"
	case errors.As(err, &ref):
		return ExitRefused, string(ref.Code)
	case errors.As(err, &val), errors.Is(err, registry.ErrInvalid):
		return ExitRefused, "validation"
	case errors.Is(err, registry.ErrConflict):
		return ExitRefused, "conflict"
	case errors.Is(err, registry.ErrNotFound):
		return ExitRefused, "not_found"
	case errors.As(err, &coded):
		return ExitRefused, string(coded.RefusalCode())
	default:
		return ExitFailure, "failure"
	}
}
