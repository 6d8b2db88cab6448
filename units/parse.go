package units

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/wisent/stado/declaration"
)

// Parsed is what reading an existing unit yields: the declaration adopt
// would record, and whether it is complete. A complete declaration renders
// back to a unit equivalent to the one read (docs/units.md lists the
// normalisations). An incomplete one carries only name, unit identity, path
// and scope; Blockers then names every assignment that keeps the unit from
// being reinstalled from a document, and Reason joins them in one sentence.
type Parsed struct {
	Service  declaration.Service `json:"service"`
	Complete bool                `json:"complete"`
	Reason   string              `json:"reason,omitempty"`
	Blockers []Blocker           `json:"blockers,omitempty"`
	// Env is the environment the unit gives its program, complete or not
	// (what service env reports).
	Env map[string]string `json:"-"`
	// ScopeGuess says the scope was not read from the unit's directory but
	// assumed; empty when the directory said it.
	ScopeGuess string `json:"scope_guess,omitempty"`
	// hostname is the name of the host the unit is read on, which writes
	// out %H in ExecStart=; "" leaves %H a blocker.
	hostname string
}

// Blocker is one thing that keeps a unit from being adopted complete.
type Blocker struct {
	// Key is the directive or property-list key ("ExecStart", "Sockets"),
	// a section ("[Socket]"), or "unit" for the kind of unit.
	Key string `json:"key"`
	// File is the unit file's or drop-in's name ("ssh.service",
	// "ssh.service.d/override.conf"); Line is 1-based, 0 when unknown.
	File   string `json:"file"`
	Line   int    `json:"line,omitempty"`
	Reason string `json:"reason"`
	// Fix says what would make the unit adoptable.
	Fix string `json:"fix"`
}

func (b Blocker) String() string {
	where := b.File
	if b.Line > 0 {
		where = fmt.Sprintf("%s:%d", b.File, b.Line)
	}
	if strings.HasPrefix(b.Key, "[") || b.Key == "unit" {
		return fmt.Sprintf("%s: %s (fix: %s)", where, b.Reason, b.Fix)
	}
	if strings.HasSuffix(b.File, ".plist") || b.File == "property list" {
		return fmt.Sprintf("key %s in %s: %s (fix: %s)", b.Key, where, b.Reason, b.Fix)
	}
	return fmt.Sprintf("%s= at %s: %s (fix: %s)", b.Key, where, b.Reason, b.Fix)
}

// block records a blocker at e.
func (p *Parsed) block(e *entry, key, reason, fix string) {
	p.Blockers = append(p.Blockers, Blocker{Key: key, File: e.file, Line: e.line, Reason: reason, Fix: fix})
}

// blockUnit records a blocker of the whole file.
func (p *Parsed) blockUnit(file, key, reason, fix string) {
	p.Blockers = append(p.Blockers, Blocker{Key: key, File: file, Reason: reason, Fix: fix})
}

// finish turns a parse with blockers into the path-only declaration.
func (p *Parsed) finish() {
	if len(p.Blockers) == 0 {
		p.Complete = true
		return
	}
	parts := make([]string, len(p.Blockers))
	for i, b := range p.Blockers {
		parts[i] = b.String()
	}
	reason := strings.Join(parts, "; ")
	p.Complete = false
	p.Reason = reason
	s := p.Service
	p.Service = declaration.Service{
		Name:             s.Name,
		Unit:             s.Unit,
		UnitPath:         s.UnitPath,
		Scope:            s.Scope,
		Product:          s.Product,
		IncompleteReason: reason,
	}
}

// checkDeclaration validates a complete parse as a declaration for a
// target of goos (declaration.ValidateService) and records each violation
// as a blocker on the file, naming the declaration field, so nothing adopt
// records is refused later. A violation of the command as a whole (its
// size) is named after the program.
func (p *Parsed) checkDeclaration(goos, file string, keyOf func(field string) (key string, line int)) {
	if len(p.Blockers) > 0 {
		return
	}
	s := p.Service
	s.UnitPath = ""
	for _, v := range declaration.ValidateService(&s, goos) {
		field := v.Path
		if field == "" {
			field = "program"
		}
		key, line := keyOf(field)
		p.Blockers = append(p.Blockers, Blocker{Key: key, File: file, Line: line,
			Reason: fmt.Sprintf("field %s: %s", field, v.Message), Fix: "write a value the declaration accepts"})
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
// directory holding it (declaration.ScopeOfUnitPath: a systemd/user directory
// or LaunchAgents is user scope, systemd/system or LaunchDaemons system
// scope); elsewhere the scope is what the unit itself says, and ScopeGuess
// says so. Errors are *SyntaxError.
func ParseFile(path string, data []byte, dropins [][]byte) (Parsed, error) {
	named := make([]DropIn, len(dropins))
	for i, d := range dropins {
		named[i] = DropIn{Path: fmt.Sprintf("%s.d/drop-in #%d", filepath.Base(path), i+1), Content: string(d)}
	}
	return ParseUnitFile(path, data, named)
}

// generatorDirs hold units systemd's generators write at boot.
var generatorDirs = []string{"/run/systemd/generator", "/run/systemd/generator.early", "/run/systemd/generator.late", "/run/systemd/transient"}

// ParseUnitFile is ParseFile with drop-ins named by their paths, so a
// blocker in one names its file.
func ParseUnitFile(path string, data []byte, dropins []DropIn) (Parsed, error) {
	return ParseUnit(path, "", data, dropins)
}

// ParseUnit is ParseUnitFile for the unit named unit, which the init
// system loaded from the file at path: when path is a systemd template
// (foo@.service) and unit one of its instances (foo@bar.service), the file
// is read as that instance (ParseSystemdInstance) and the declaration's
// UnitPath is the instance's own file beside the template; any other unit
// (or "") reads the file as the unit its name says.
func ParseUnit(path, unit string, data []byte, dropins []DropIn) (Parsed, error) {
	return ParseUnitOn("", path, unit, data, dropins)
}

// ParseUnitOn is ParseUnit for a unit read on the host named hostname (the
// UnitFile's Hostname): %H in ExecStart= is written out as hostname, the
// value systemd gives it there, so the declaration's arguments are
// literal. hostname "" (the file was not read on its host) leaves %H a
// blocker. It touches no host.
func ParseUnitOn(hostname, path, unit string, data []byte, dropins []DropIn) (Parsed, error) {
	var p Parsed
	var err error
	goos := declaration.OSLinux
	instance := false
	if IsPlist(data) {
		goos = declaration.OSDarwin
		p, err = parsePlistNamed(data, filepath.Base(path))
	} else {
		file := filepath.Base(path)
		if unit == "" || !InstanceOf(unit, file) {
			unit = file
		}
		instance = unit != file
		p, err = parseSystemd(data, file, unit, path, hostname, dropins)
	}
	if err != nil {
		if se, ok := err.(*SyntaxError); ok && goos == declaration.OSDarwin {
			se.File = path
		}
		return Parsed{}, err
	}
	if scope, ok := declaration.ScopeOfUnitPath(goos, path); ok {
		p.Service.Scope = scope
	} else if goos == declaration.OSDarwin {
		p.ScopeGuess = fmt.Sprintf("%s is in neither a LaunchDaemons nor a LaunchAgents directory; scope %s is a guess", path, p.Service.EffectiveScope())
	} else {
		p.ScopeGuess = fmt.Sprintf("%s is in no systemd/system or systemd/user directory; scope %s is read from the unit", path, p.Service.EffectiveScope())
	}
	for _, d := range generatorDirs {
		if filepath.Dir(path) == d {
			p.Blockers = append(p.Blockers, Blocker{Key: "unit", File: filepath.Base(path),
				Reason: fmt.Sprintf("systemd generated it at boot in %s (or made it transient): it has no source file a declaration could replace", d),
				Fix:    "declare what the generator reads (fstab, crypttab, an init script) instead"})
			p.Complete = true
			p.finish()
		}
	}
	p.Service.UnitPath = path
	if instance {
		p.Service.UnitPath = filepath.Join(filepath.Dir(path), p.Service.Unit)
	}
	return p, nil
}

// Canonical returns s with every default made explicit the same way, so two
// declarations that render the same unit compare equal: scope defaults to
// system, keep_alive true is nil, empty lists and maps are nil, a unit path
// equal to the default for goos and home is empty, and a declaration with
// stado_defaults false whose values are exactly stado's defaults (a unit
// stado rendered) becomes the declaration with the defaults left unset.
func Canonical(s declaration.Service, goos, home string) declaration.Service {
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
	if len(s.LaunchdKeys) == 0 {
		s.LaunchdKeys = nil
	}
	if len(s.Limits) == 0 {
		s.Limits = nil
	}
	if s.UnitPath != "" {
		d := s
		d.UnitPath = ""
		if UnitPath(d, goos, home) == s.UnitPath {
			s.UnitPath = ""
		}
	}
	if s.StadoDefaults != nil && *s.StadoDefaults {
		s.StadoDefaults = nil
	}
	if s.StadoDefaults != nil && !*s.StadoDefaults {
		if d, ok := foldStadoDefaults(s, goos, home); ok {
			s = d
		}
	}
	return s
}

// foldStadoDefaults turns an explicit declaration that holds exactly what
// stado's defaults add into the declaration that leaves them unset, when
// both render the same bytes.
func foldStadoDefaults(s declaration.Service, goos, home string) (declaration.Service, bool) {
	d := s
	d.StadoDefaults = nil
	d.Env = map[string]string{}
	for k, v := range s.Env {
		if k != "PATH" || v != FixedPath(goos) {
			d.Env[k] = v
		}
	}
	if len(d.Env) == 0 {
		d.Env = nil
	}
	if d.RestartSec == strconv.Itoa(RestartDelaySeconds) {
		d.RestartSec = ""
	}
	switch d.Restart {
	case "always":
		d.Restart, d.KeepAlive = "", nil
	case "no":
		f := false
		d.Restart, d.KeepAlive = "", &f
	}
	if goos == declaration.OSDarwin {
		if d.LaunchdKeys["RunAtLoad"] == "<true/>" {
			keys := map[string]string{}
			for k, v := range d.LaunchdKeys {
				if k != "RunAtLoad" {
					keys[k] = v
				}
			}
			d.LaunchdKeys = keys
			if len(keys) == 0 {
				d.LaunchdKeys = nil
			}
		}
		if d.StdoutPath == d.StderrPath && d.StdoutPath == LaunchdLogPath(home, d.Unit) {
			d.StdoutPath, d.StderrPath = "", ""
		}
	} else {
		if d.Description == "stado service "+d.Name {
			d.Description = ""
		}
		if d.StartLimitIntervalSec == "0" {
			d.StartLimitIntervalSec = ""
		}
		want := "multi-user.target"
		if d.EffectiveScope() == declaration.ScopeUser {
			want = "default.target"
		}
		if len(d.WantedBy) == 1 && d.WantedBy[0] == want && len(d.RequiredBy) == 0 {
			d.WantedBy = nil
		}
	}
	a, err1 := Render(s, goos, home)
	b, err2 := Render(d, goos, home)
	if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
		return s, false
	}
	return d, true
}
