package units

import (
	"errors"
	"io/fs"

	"github.com/wisent/stado/declaration"
)

// Installed is how the unit file of a declaration on this host compares
// with what ensure would write there: the declaration's rendering
// (Render) with the installed fields a product's unit keeps
// (KeepInstalled).
type Installed struct {
	// Path is the unit file's path (UnitPath).
	Path string
	// Absent is true when there is no file at Path.
	Absent bool
	// Drift is true when the file is absent or its bytes are not the
	// rendering's.
	Drift bool
	// Installed is the file's bytes (nil when absent), Rendered what
	// ensure would write over them.
	Installed, Rendered []byte
}

// CompareInstalled reads s's unit file on this host (at UnitPath(s, goos,
// home), bounded by MaxFileBytes) and compares it with s's rendering for
// goos, as ensure would install it. It changes nothing. An incomplete
// declaration is an *IncompleteError (with Path and Absent still set); a
// declaration that does not render is a *RenderError (wrapping the
// renderer's error); a file that cannot be read is the read's error.
func CompareInstalled(s declaration.Service, goos, home string) (Installed, error) {
	return CompareRendered(s, goos, home, func() ([]byte, error) { return Render(s, goos, home) })
}

// CompareRendered is CompareInstalled with s's rendering from render,
// called only for a complete declaration: a caller that keeps renderings
// while the declaration stands (the host process's passes) hands its own.
func CompareRendered(s declaration.Service, goos, home string, render func() ([]byte, error)) (Installed, error) {
	in := Installed{Path: UnitPath(s, goos, home)}
	old, err := readBounded(in.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		in.Absent, old = true, nil
	case err != nil:
		return in, err
	}
	in.Installed = old
	if s.Incomplete() {
		in.Drift = in.Absent
		return in, &IncompleteError{Service: s.Name, Unit: s.Unit, Reason: s.IncompleteReason}
	}
	content, err := render()
	if err != nil {
		return in, &RenderError{Unit: s.Unit, Err: err}
	}
	in.Rendered = KeepInstalled(s, goos, content, old)
	in.Drift = in.Absent || string(old) != string(in.Rendered)
	return in, nil
}

// RenderError is a declaration that does not render on this host: the
// renderer's error, named by the unit.
type RenderError struct {
	Unit string
	Err  error
}

func (e *RenderError) Error() string { return "render " + e.Unit + ": " + e.Err.Error() }
func (e *RenderError) Unwrap() error { return e.Err }
