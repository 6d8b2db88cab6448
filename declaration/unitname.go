package declaration

import (
	"fmt"
	"path"
	"strings"
)

// This file is the one owner of what a unit identity looks like on each OS
// and of where unit files live per OS and scope. Service validation,
// the catalog, rendering and parsing in units, and the channel's argument
// checks all call these functions rather than keep their own copies.

// SystemdUnitTypes are the systemd unit types stado names on a host: the
// service a declaration runs, and the units that commonly come with one
// (its socket, timer, path and mount units, and targets), so show, logs,
// start, stop and adopt reach them too. The kernel's and the manager's own
// bookkeeping units (.device, .scope, .slice, .swap, .automount) are not
// addressed: no operator starts or declares them.
var SystemdUnitTypes = []string{".service", ".socket", ".timer", ".target", ".path", ".mount"}

// MaxUnitNameBytes bounds a systemd unit name and a launchd label.
const MaxUnitNameBytes = 255

// NameError says why a unit name, launchd label or environment variable
// name is refused. Name is the refused text; Reason is the whole sentence
// (it quotes Name), which Error returns.
type NameError struct {
	Name   string
	Reason string
}

func (e *NameError) Error() string { return e.Reason }

func nameErrorf(name, format string, args ...any) error {
	return &NameError{Name: name, Reason: fmt.Sprintf(format, args...)}
}

var (
	systemdFirst = Chars("A-Za-z0-9_")
	systemdRest  = Chars("A-Za-z0-9:_.\\@-")
	launchdFirst = Chars("A-Za-z0-9")
	launchdRest  = Chars("A-Za-z0-9_@ -")
)

// CheckUnitName reports whether unit is a unit identity stado may name on a
// host of os: on linux a systemd unit name (a letter, digit or '_' first,
// then letters, digits and ':', '_', '.', '\', '@', '-'; one of
// SystemdUnitTypes as its suffix; a template instance such as
// name@blue.service, never the bare template name@.service, which nothing
// can start), on darwin a reverse-DNS launchd label (at least two
// dot-separated parts, each a letter or digit followed by letters, digits,
// '_', '-', '@' and spaces (launchd takes any string; a space travels the
// channel single-quoted), as Homebrew's homebrew.mxcl.postgresql@14, never
// ending in a space; a label with
// '@' that ends in a systemd unit type, such as web@1.service, is refused as
// the systemd instance it looks like). Both are at most MaxUnitNameBytes.
// Any other os is refused.
// The error is a *NameError. It is the rule for every unit the registry
// declares, complete or not; a unit stado renders must also pass
// CheckServiceUnit.
func CheckUnitName(os, unit string) error {
	switch os {
	case OSLinux:
		return checkSystemdName(unit)
	case OSDarwin:
		return checkLaunchdLabel(unit)
	}
	return nameErrorf(unit, "unit %q: os %q is neither linux nor darwin", unit, os)
}

func checkSystemdName(u string) error {
	switch {
	case u == "":
		return nameErrorf(u, "empty systemd unit name")
	case len(u) > MaxUnitNameBytes:
		return nameErrorf(u, "systemd unit name is %d bytes, at most %d", len(u), MaxUnitNameBytes)
	case u[0] == '-':
		return nameErrorf(u, "%q starts with '-'", u)
	case !Grammar(u, systemdFirst, systemdRest, MaxUnitNameBytes):
		return nameErrorf(u, "%q is not a systemd unit name (a letter, digit or '_' first, then letters, digits, ':', '_', '.', '\\', '@', '-')", u)
	}
	suffix := unitType(u)
	if suffix == "" {
		return nameErrorf(u, "%q has no unit type suffix stado names (%s)", u, strings.Join(SystemdUnitTypes, ", "))
	}
	prefix := strings.TrimSuffix(u, suffix)
	if strings.HasSuffix(prefix, ".") {
		return nameErrorf(u, "%q has an empty name before %s", u, suffix)
	}
	if strings.HasSuffix(prefix, "@") {
		return nameErrorf(u, "%q is a template; name an instance such as %s", u, prefix+"NAME"+suffix)
	}
	return nil
}

// unitType returns the suffix of u among SystemdUnitTypes, or "".
func unitType(u string) string {
	for _, s := range SystemdUnitTypes {
		if strings.HasSuffix(u, s) && len(u) > len(s) {
			return s
		}
	}
	return ""
}

func checkLaunchdLabel(l string) error {
	switch {
	case l == "":
		return nameErrorf(l, "empty launchd label")
	case len(l) > MaxUnitNameBytes:
		return nameErrorf(l, "launchd label is %d bytes, at most %d", len(l), MaxUnitNameBytes)
	case !strings.Contains(l, ".") ||
		!Dotted(l, func(part string) bool { return Grammar(part, launchdFirst, launchdRest, MaxUnitNameBytes) }):
		return nameErrorf(l, "%q is not a reverse-DNS launchd label (such as com.example.name: dot-separated parts of letters, digits, '_', '-', '@' and spaces, each starting with a letter or digit)", l)
	case strings.HasSuffix(l, " ") || strings.Contains(l, " ."):
		return nameErrorf(l, "%q has a part ending in a space", l)
	case strings.Contains(l, " ") && unitType(l) != "":
		// such as "a b.service": it reads as a systemd unit, and no
		// systemd unit name holds a space
		return nameErrorf(l, "%q holds a space and ends in a systemd unit type, so it reads as a systemd unit name, which holds no space", l)
	case strings.Contains(l, "@") && unitType(l) != "":
		// '@' is inert in argv, paths and launchctl's domain/label targets;
		// it is refused only where it would read as a systemd instance.
		return nameErrorf(l, "%q is a systemd instance name, not a launchd label", l)
	}
	return nil
}

// CheckServiceUnit reports whether unit may be the unit of something stado
// renders and installs from a program: a product of the catalog, or a
// registry declaration that has a program. On top of CheckUnitName it
// requires on linux a plain service unit (NAME.service), since stado
// renders only services, and on darwin a label outside Apple's namespace
// (com.apple.*), whose jobs belong to the system. The error is a
// *NameError.
func CheckServiceUnit(os, unit string) error {
	if err := CheckUnitName(os, unit); err != nil {
		return err
	}
	switch {
	case os == OSLinux && !strings.HasSuffix(unit, ".service"):
		return nameErrorf(unit, "%q is not a service unit (NAME.service): stado renders and installs services only", unit)
	case os == OSDarwin && strings.HasPrefix(unit, "com.apple."):
		return nameErrorf(unit, "%q is in Apple's namespace (com.apple.*), whose jobs stado never installs", unit)
	}
	return nil
}

// Where unit files live. The user directories sit below the account's home
// directory; /Library/LaunchAgents at the root also holds agents (loaded
// for every user), which a declaration may name but stado never chooses.
const (
	SystemdSystemDir   = "/etc/systemd/system"
	SystemdUserSubdir  = ".config/systemd/user"
	LaunchDaemonsDir   = "/Library/LaunchDaemons"
	LaunchAgentsSubdir = "Library/LaunchAgents"
)

// UnitDir returns the directory stado installs a unit of os and scope in:
// linux system /etc/systemd/system, linux user <home>/.config/systemd/user,
// darwin system /Library/LaunchDaemons, darwin user
// <home>/Library/LaunchAgents. An empty scope means ScopeSystem. It returns
// "" for an unknown os or scope.
func UnitDir(os, scope, home string) string {
	if scope == "" {
		scope = ScopeSystem
	}
	switch {
	case os == OSLinux && scope == ScopeSystem:
		return SystemdSystemDir
	case os == OSLinux && scope == ScopeUser:
		return path.Join(home, SystemdUserSubdir)
	case os == OSDarwin && scope == ScopeSystem:
		return LaunchDaemonsDir
	case os == OSDarwin && scope == ScopeUser:
		return path.Join(home, LaunchAgentsSubdir)
	}
	return ""
}

// UnitFileName is the name of unit's file on os: the unit name itself for
// systemd, the label plus ".plist" for launchd.
func UnitFileName(os, unit string) string {
	if os == OSDarwin {
		return unit + ".plist"
	}
	return unit
}

// DefaultUnitPath is where stado installs unit of os and scope when the
// declaration names no unit_path: UnitFileName in UnitDir. It returns ""
// for an unknown os or scope.
func DefaultUnitPath(os, scope, home, unit string) string {
	dir := UnitDir(os, scope, home)
	if dir == "" {
		return ""
	}
	return path.Join(dir, UnitFileName(os, unit))
}

// ScopeOfUnitPath returns the scope whose units the init system of os reads
// from the directory holding unitPath, and false when that directory holds
// no units of os. It knows every directory of each init system's search
// path, not only those stado installs in: on linux a directory ending in
// systemd/system (/etc, /run, /usr/lib, /lib, ...) is system scope and one
// ending in systemd/user (including <home>/.config/systemd/user) is user
// scope; on darwin LaunchDaemons is system scope and LaunchAgents (in a
// home or at the root) user scope.
func ScopeOfUnitPath(os, unitPath string) (string, bool) {
	dir := path.Dir(unitPath)
	switch os {
	case OSLinux:
		switch {
		case strings.HasSuffix(dir, "/systemd/system"):
			return ScopeSystem, true
		case strings.HasSuffix(dir, "/systemd/user"):
			return ScopeUser, true
		}
	case OSDarwin:
		switch {
		case strings.HasSuffix(dir, "/LaunchDaemons"):
			return ScopeSystem, true
		case strings.HasSuffix(dir, "/LaunchAgents"):
			return ScopeUser, true
		}
	}
	return "", false
}

// CheckUnitPath reports whether unitPath (absolute and clean) is a file
// stado may install unit of os and scope as: directly in UnitDir for some
// home directory (the home is not known here, so any directory ending in
// /.config/systemd/user below some directory, or in /Library/LaunchAgents,
// counts; /Library/LaunchAgents itself is also darwin user scope), and named
// UnitFileName(os, unit). An empty unit skips the name check. The error
// says what is wrong in words an operator can act on.
func CheckUnitPath(os, scope, unit, unitPath string) error {
	if scope == "" {
		scope = ScopeSystem
	}
	dir, base := path.Split(unitPath)
	dir = strings.TrimSuffix(dir, "/")
	var ok bool
	want := UnitDir(os, scope, "<home>")
	switch {
	case os == OSLinux && scope == ScopeSystem, os == OSDarwin && scope == ScopeSystem:
		ok = dir == want
	case os == OSLinux && scope == ScopeUser:
		ok = strings.HasSuffix(dir, "/"+SystemdUserSubdir) && dir != "/"+SystemdUserSubdir
	case os == OSDarwin && scope == ScopeUser:
		ok = strings.HasSuffix(dir, "/"+LaunchAgentsSubdir)
	default:
		return fmt.Errorf("%q: no unit directory for os %q and scope %q", unitPath, os, scope)
	}
	if !ok {
		return fmt.Errorf("%q is outside %s, where %s %s units live", unitPath, want, os, scope)
	}
	if os == OSDarwin && strings.HasSuffix(base, ".plist") && len(base) > len(".plist") {
		return nil // launchd reads a job's label from the file, whatever its name (issue 14)
	}
	if wantBase := UnitFileName(os, unit); unit != "" && base != wantBase {
		return fmt.Errorf("file name %q does not match the unit (want %q)", base, wantBase)
	}
	return nil
}
