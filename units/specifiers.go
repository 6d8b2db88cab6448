package units

import (
	"fmt"
	"path"
	"strings"
)

// How adopt treats systemd's specifiers (systemd.unit(5), "Specifiers").
//
// The unit's name and file decide the name specifiers: %n %N %p %P %i %I
// %j %J %f, and %y %Y when the file's path is known. Adopt expands them for the
// unit being adopted (for a template's instance, foo@bar.service, with the
// instance bar), in every assignment, so the declaration holds the values
// systemd gives the instance and renders into a plain unit file of the
// instance's own name. %y and %Y name the file the unit was read from,
// which the rendering does not live in, so they are expanded too.
//
// Every other specifier (%H %l %q %m %b %a %A %B %M %o %w %W %v, the
// manager's directories %t %S %C %L %E %T %V, its account %u %U %g %G %h
// %s, and the credentials directory %d) depends on the host and the
// manager, never on the unit's name or file: systemd expands it the same
// in the rendered unit on the same host, so it is kept as written where a
// field keeps text verbatim, and is a blocker only where a declaration
// holds literal values (the program and its arguments, dependency lists).

// unitName is a systemd unit name split into its parts.
type unitName struct {
	full     string // foo@bar.service
	prefix   string // foo
	instance string // bar; "" when not an instance
	suffix   string // .service
	template bool   // foo@.service: a template with no instance
}

// splitUnitName splits a unit name the way systemd does: the suffix after
// the last '.', the prefix before the first '@', the instance between them.
func splitUnitName(u string) unitName {
	n := unitName{full: u}
	stem := u
	if i := strings.LastIndexByte(u, '.'); i > 0 {
		stem, n.suffix = u[:i], u[i:]
	}
	n.prefix = stem
	if i := strings.IndexByte(stem, '@'); i >= 0 {
		n.prefix, n.instance = stem[:i], stem[i+1:]
		n.template = n.instance == ""
	}
	return n
}

// IsTemplate reports whether unit names a template with no instance
// (foo@.service).
func IsTemplate(unit string) bool { return splitUnitName(unit).template }

// InstanceOf reports whether unit is an instance (foo@bar.service) of the
// template file named file (foo@.service).
func InstanceOf(unit, file string) bool {
	u, f := splitUnitName(unit), splitUnitName(file)
	return f.template && u.instance != "" && u.prefix == f.prefix && u.suffix == f.suffix
}

// InstanceName returns the unit name of template's instance: foo@.service
// and bar give foo@bar.service.
func InstanceName(template, instance string) string {
	n := splitUnitName(template)
	return n.prefix + "@" + instance + n.suffix
}

// unescapeUnitName undoes systemd's unit name escaping: '-' stands for '/'
// and \xNN for the byte NN. False when an escape is malformed.
func unescapeUnitName(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '-':
			b.WriteByte('/')
		case c == '\\':
			if i+3 >= len(s) || s[i+1] != 'x' {
				return "", false
			}
			hi, ok1 := unhex(s[i+2])
			lo, ok2 := unhex(s[i+3])
			if !ok1 || !ok2 {
				return "", false
			}
			b.WriteByte(hi<<4 | lo)
			i += 3
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// specifierValue is what one specifier stands for, or why adopt cannot
// write it out.
type specifierValue struct {
	value string
	why   string // non-empty: the specifier cannot be expanded
}

// nameSpecifierValues returns what each name specifier stands for in
// the unit named unit read from the file at file (its path; "" leaves %y
// and %Y unexpanded).
func nameSpecifierValues(unit, file string) map[byte]specifierValue {
	n := splitUnitName(unit)
	unesc := func(s string) specifierValue {
		v, ok := unescapeUnitName(s)
		if !ok {
			return specifierValue{why: fmt.Sprintf("%q holds a malformed escape", s)}
		}
		return specifierValue{value: v}
	}
	last := n.prefix
	if i := strings.LastIndexByte(last, '-'); i >= 0 {
		last = last[i+1:]
	}
	vals := map[byte]specifierValue{
		'n': {value: n.full},
		'N': {value: strings.TrimSuffix(n.full, n.suffix)},
		'p': {value: n.prefix},
		'P': unesc(n.prefix),
		'i': {value: n.instance},
		'I': unesc(n.instance),
		'j': {value: last},
		'J': unesc(last),
		'f': filenameSpecifier(n),
	}
	if file != "" {
		vals['y'] = specifierValue{value: file}
		vals['Y'] = specifierValue{value: path.Dir(file)}
	}
	return vals
}

// filenameSpecifier is %f: the instance (else the prefix) unescaped as an
// absolute path, "-" alone standing for "/".
func filenameSpecifier(n unitName) specifierValue {
	s := n.instance
	if s == "" {
		s = n.prefix
	}
	if s == "-" {
		return specifierValue{value: "/"}
	}
	v, ok := unescapeUnitName(s)
	if !ok || v == "" || strings.HasPrefix(v, "/") || strings.HasSuffix(v, "/") || path.Clean("/"+v) != "/"+v {
		return specifierValue{why: fmt.Sprintf("%q is not an escaped path", s)}
	}
	return specifierValue{value: "/" + v}
}

// safeExpansion reports whether v reads back as itself wherever it is
// written in a unit value: quoted or not, in a command line, a list or a
// verbatim setting. Values with whitespace, quotes, backslashes, '%', '$',
// ';' or control characters would need quoting adopt does not guess at.
func safeExpansion(v string) bool {
	if v == "" {
		return false
	}
	for _, r := range v {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune("-_.:/@+,=~", r):
		default:
			return false
		}
	}
	return true
}

// expandNameSpecifiers writes out every name specifier of v with vals,
// leaving '%%' and every other specifier as written. It returns the
// specifiers it could not write out, each with why.
func expandNameSpecifiers(v string, vals map[byte]specifierValue) (string, []string) {
	if !strings.Contains(v, "%") {
		return v, nil
	}
	var b strings.Builder
	var bad []string
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c != '%' || i+1 >= len(v) {
			b.WriteByte(c)
			continue
		}
		s := v[i+1]
		sv, known := vals[s]
		switch {
		case s == '%' || !known:
			b.WriteByte('%')
			b.WriteByte(s)
		case sv.why != "":
			bad = append(bad, fmt.Sprintf("%%%c: %s", s, sv.why))
			b.WriteByte('%')
			b.WriteByte(s)
		case !safeExpansion(sv.value):
			if sv.value == "" {
				bad = append(bad, fmt.Sprintf("%%%c stands for an empty value here", s))
			} else {
				bad = append(bad, fmt.Sprintf("%%%c stands for %q, which a unit value would have to quote", s, sv.value))
			}
			b.WriteByte('%')
			b.WriteByte(s)
		default:
			b.WriteString(sv.value)
		}
		i++
	}
	return b.String(), bad
}
