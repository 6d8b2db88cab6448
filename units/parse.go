package units

import (
	"bytes"
	"fmt"
	"path/filepath"

	"github.com/wisent/stado/registry"
)

// Parsed is what reading an existing unit yields: the declaration adopt
// would record, and whether it is complete. A complete declaration renders
// back to a unit that runs the same program with the same arguments and
// environment under the same restart policy. An incomplete one carries only
// name, unit identity and scope, with Reason saying exactly what a
// declaration cannot represent.
type Parsed struct {
	Service  registry.Service `json:"service"`
	Complete bool             `json:"complete"`
	Reason   string           `json:"reason,omitempty"`
}

// incomplete turns p into a path-only declaration with reason.
func (p *Parsed) incomplete(format string, args ...any) {
	reason := fmt.Sprintf(format, args...)
	p.Complete = false
	p.Reason = reason
	s := p.Service
	p.Service = registry.Service{
		Name:             s.Name,
		Unit:             s.Unit,
		UnitPath:         s.UnitPath,
		Scope:            s.Scope,
		Product:          s.Product,
		IncompleteReason: reason,
	}
}

// IsPlist reports whether data looks like a property list (XML or binary)
// rather than a systemd unit file.
func IsPlist(data []byte) bool {
	head := bytes.TrimLeft(data, " \t\r\n\ufeff")
	return bytes.HasPrefix(head, []byte("bplist")) ||
		bytes.HasPrefix(head, []byte("<?xml")) ||
		bytes.HasPrefix(head, []byte("<!DOCTYPE plist")) ||
		bytes.HasPrefix(head, []byte("<plist"))
}

// ParseFile parses the unit file at path (its bytes in data) whatever its
// kind: a property list is read by ParsePlist, anything else as a systemd
// unit named by the file's base name with dropins applied in order. It
// records path as the declaration's UnitPath and takes the scope from the
// directory holding it (registry.ScopeOfUnitPath: a systemd/user directory
// or LaunchAgents is user scope, systemd/system or LaunchDaemons system
// scope); elsewhere the scope is what the unit itself says. Errors are
// *SyntaxError.
func ParseFile(path string, data []byte, dropins [][]byte) (Parsed, error) {
	var p Parsed
	var err error
	if IsPlist(data) {
		p, err = ParsePlist(data)
		if err != nil {
			if se, ok := err.(*SyntaxError); ok {
				se.File = path
			}
			return Parsed{}, err
		}
		if scope, ok := registry.ScopeOfUnitPath(registry.OSDarwin, path); ok {
			p.Service.Scope = scope
		}
	} else {
		p, err = ParseSystemd(data, filepath.Base(path), dropins)
		if err != nil {
			return Parsed{}, err
		}
		if scope, ok := registry.ScopeOfUnitPath(registry.OSLinux, path); ok {
			p.Service.Scope = scope
		}
	}
	p.Service.UnitPath = path
	return p, nil
}

// Canonical returns s with every default made explicit the same way, so two
// declarations that render the same unit compare equal: scope defaults to
// system, keep_alive true is nil, empty args and env are nil, and a unit path
// equal to the default for goos and home is empty.
func Canonical(s registry.Service, goos, home string) registry.Service {
	s.Scope = s.EffectiveScope()
	if s.KeepsAlive() {
		s.KeepAlive = nil
	}
	if len(s.Args) == 0 {
		s.Args = nil
	}
	if len(s.Env) == 0 {
		s.Env = nil
	}
	if s.UnitPath != "" {
		d := s
		d.UnitPath = ""
		if UnitPath(d, goos, home) == s.UnitPath {
			s.UnitPath = ""
		}
	}
	return s
}
