package units

import (
	"errors"
	"fmt"
	"strings"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

// ErrIncomplete is the sentinel of a declaration that names a unit but no
// program, so nothing can be rendered from it.
var ErrIncomplete = errors.New("declaration incomplete")

// IncompleteError says a declaration cannot be rendered because it carries no
// program. It maps to the refusal code declaration_incomplete.
type IncompleteError struct {
	Service string // the declaration's name
	Unit    string // its unit identity
	Reason  string // the recorded reason, when adopt recorded one
}

func (e *IncompleteError) Error() string {
	msg := fmt.Sprintf("service %s (%s) declares no program, so its unit cannot be rendered", e.Service, e.Unit)
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// RefusalCode is the stable machine code the CLI reports.
func (e *IncompleteError) RefusalCode() refusal.Code { return refusal.DeclarationIncomplete }

// Unwrap lets errors.Is(err, ErrIncomplete) hold.
func (e *IncompleteError) Unwrap() error { return ErrIncomplete }

// FieldError says one field of a declaration holds a value that cannot be
// written into a unit (a newline, a NUL, invalid UTF-8, a relative program).
// It unwraps to registry.ErrInvalid, so the CLI reports it as validation.
type FieldError struct {
	Field  string // the field path, e.g. "args[2]" or "env.TOKEN"
	Reason string // what is wrong with it, lowercase
}

func (e *FieldError) Error() string { return fmt.Sprintf("field %s: %s", e.Field, e.Reason) }

// Unwrap makes errors.Is(err, registry.ErrInvalid) hold.
func (e *FieldError) Unwrap() error { return registry.ErrInvalid }

// SyntaxError says a unit file or property list could not be read at all.
// Line is 1-based and zero when the position is unknown.
type SyntaxError struct {
	File   string
	Line   int
	Reason string
}

func (e *SyntaxError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Reason)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Reason)
}

// Unwrap makes errors.Is(err, registry.ErrInvalid) hold.
func (e *SyntaxError) Unwrap() error { return registry.ErrInvalid }

// ExitError is a command run through a Runner that exited nonzero.
type ExitError struct {
	Argv   []string
	Code   int
	Stderr string // the last lines of its standard error
}

func (e *ExitError) Error() string {
	msg := fmt.Sprintf("%s exited %d", strings.Join(e.Argv, " "), e.Code)
	if s := strings.TrimSpace(e.Stderr); s != "" {
		msg += ": " + s
	}
	return msg
}

// JobError is a systemd job (start, stop, restart) that finished with a
// result other than done.
type JobError struct {
	Unit   string
	Op     string // start, stop, restart
	Result string // systemd's job result: failed, timeout, canceled, dependency, skipped
}

func (e *JobError) Error() string {
	return fmt.Sprintf("%s %s: job finished %s", e.Op, e.Unit, e.Result)
}

// NotLoadedError says the init system does not know the unit.
type NotLoadedError struct {
	Unit string
}

func (e *NotLoadedError) Error() string { return fmt.Sprintf("unit %s is not loaded", e.Unit) }

// RefusalCode maps to not_found in the CLI.
func (e *NotLoadedError) RefusalCode() refusal.Code { return refusal.NotFound }

// Unwrap makes errors.Is(err, store.ErrNotFound) hold.
func (e *NotLoadedError) Unwrap() error { return store.ErrNotFound }
