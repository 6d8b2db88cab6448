package cli

import (
	"errors"
	"fmt"

	"github.com/wisent/stado/registry"
)

// Exit codes of every stado command (docs/exit-codes.md).
const (
	ExitOK      = 0 // the command did what it was asked
	ExitFailure = 1 // something failed: transport, host, store I/O
	ExitUsage   = 2 // the command line itself is wrong
	ExitRefused = 3 // refused: invalid input, conflict, not found, unsafe
)

// Refusal is a result, not a crash: the command declined with a stable
// machine code that --json carries.
type Refusal struct {
	Code    string // stable machine code, e.g. "not_found", "declaration_incomplete"
	Message string // short, lowercase, no trailing period
	Hint    string // optional fix, printed as a hint: line
	Details any    // optional structured detail for --json
	Err     error  // optional cause
}

func (r *Refusal) Error() string { return r.Message }
func (r *Refusal) Unwrap() error { return r.Err }

// refuse builds a Refusal with a formatted message.
func refuse(code, format string, args ...any) *Refusal {
	return &Refusal{Code: code, Message: fmt.Sprintf(format, args...)}
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
		coded interface{ RefusalCode() string }
	)
	switch {
	case err == nil:
		return ExitOK, ""
	case errors.As(err, &use):
		return ExitUsage, "usage"
	case errors.As(err, &ref):
		return ExitRefused, ref.Code
	case errors.As(err, &val), errors.Is(err, registry.ErrInvalid):
		return ExitRefused, "validation"
	case errors.Is(err, registry.ErrConflict):
		return ExitRefused, "conflict"
	case errors.Is(err, registry.ErrNotFound):
		return ExitRefused, "not_found"
	case errors.As(err, &coded):
		return ExitRefused, coded.RefusalCode()
	default:
		return ExitFailure, "failure"
	}
}
