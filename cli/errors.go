package cli

import (
	"errors"
	"fmt"

	"github.com/wisent/stado/refusal"
)

// Exit codes of every stado command (docs/exit-codes.md).
const (
	ExitOK      = 0 // the command did what it was asked
	ExitFailure = 1 // something failed: transport, host, store I/O
	ExitUsage   = 2 // the command line itself is wrong
	ExitRefused = 3 // refused: invalid input, conflict, not found, unsafe
)

// codeFailure is the machine code of an error that is not a refusal.
const codeFailure = "failure"

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
// machine code --json reports. It is the only place that decides: an error
// whose chain carries a refusal code (refusal.CodeOf) is a refusal with that
// code; anything else is a failure.
func exitCode(err error) (int, string) {
	var use *usageError
	switch {
	case err == nil:
		return ExitOK, ""
	case errors.As(err, &use), refusal.Is(err, refusal.Usage):
		return ExitUsage, string(refusal.Usage)
	}
	if code, ok := refusal.CodeOf(err); ok {
		return ExitRefused, string(code)
	}
	return ExitFailure, codeFailure
}
