package declaration

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits of one service's declaration (docs/limits.md): past them the
// render, the channel or the host would refuse it later, so validation
// refuses it first.
const (
	// MaxArgs and MaxEnv bound the arguments and environment variables of
	// one service.
	MaxArgs = 1_024
	MaxEnv  = 1_024
	// MaxArgBytes is the longest single argument, and the longest
	// NAME=VALUE of one variable: Linux refuses to start a program with a
	// string of 128 KiB or more (MAX_ARG_STRLEN, its NUL included).
	MaxArgBytes = 128<<10 - 1
	// MaxCommandBytes bounds program, arguments and environment together,
	// so that a rendered unit stays under the channel's 1 MiB limit on
	// unit content even when every byte is escaped (at most 4 bytes each).
	MaxCommandBytes = 256 << 10
)

func (v *validator) serviceLimits(s *Service, os, p string) {
	if !ValidUnitEscapes(s.Unit) {
		v.add(p+".unit", "%q holds a backslash that does not start a systemd escape \\xHH (a trailing one joins the next line of a unit file)", s.Unit)
	}
	if s.Program != "" {
		if why := programProblem(s.Program, os); why != "" {
			v.add(p+".program", "%s", why)
		}
	}
	if len(s.Args) > MaxArgs {
		v.add(p+".args", "%d arguments, the limit is %d", len(s.Args), MaxArgs)
	}
	total := len(s.Program)
	for i, a := range s.Args {
		total += len(a) + 1
		ap := func() string { return p + ".args[" + strconv.Itoa(i) + "]" }
		switch {
		case len(a) > MaxArgBytes:
			v.add(ap(), "%d bytes, at most %d: Linux refuses to start a program with a longer argument", len(a), MaxArgBytes)
		case controlFor(a, os) != "" && ArgProblem(a) == "":
			v.add(ap(), "holds the control character %s; no unit format can carry it as it is", controlFor(a, os))
		}
	}
	if len(s.Env) > MaxEnv {
		v.add(p+".env", "%d variables, the limit is %d", len(s.Env), MaxEnv)
	}
	for _, k := range sortedEnvNames(s.Env) {
		val := s.Env[k]
		total += len(k) + len(val) + 2
		switch {
		case len(k)+1+len(val) > MaxArgBytes:
			v.add(p+".env."+k, "%s=VALUE is %d bytes, at most %d: Linux refuses to start a program with a longer variable", k, len(k)+1+len(val), MaxArgBytes)
		case controlFor(val, os) != "" && !strings.ContainsAny(val, "\x00\r") && (os == OSDarwin || !hasControl(val)):
			// NUL and line breaks are reported by the main rules.
			v.add(p+".env."+k, "value holds the control character %s; no unit format can carry it as it is", controlFor(val, os))
		}
	}
	if total > MaxCommandBytes {
		v.add(p, "program, arguments and environment are %d bytes together, at most %d: the rendered unit would pass the channel's 1 MiB limit", total, MaxCommandBytes)
	}
	if s.UnitPath != "" && PathProblem(s.UnitPath) == "" {
		// The directories; the file name is held to the unit's name.
		dir := s.UnitPath[:strings.LastIndexByte(s.UnitPath, '/')]
		for _, seg := range strings.Split(strings.TrimPrefix(dir, "/"), "/") {
			if seg == "" {
				continue
			}
			if !unitPathSegment(seg) {
				v.add(p+".unit_path", "segment %q holds a character the host refuses in unit paths (letters, digits and ._@:+,%%=- only, not first '-')", seg)
				break
			}
		}
	}
}

// programProblem says why a program path cannot be rendered, or "". On
// linux the program is the first word of ExecStart=, where systemd reads
// '$' literally (the render's $$ would name another file) and refuses
// quotes, backslashes and whitespace other than a space; no unit format
// carries control characters.
func programProblem(prog, os string) string {
	if c := controlOtherThanTab(prog); c != "" || strings.ContainsRune(prog, '\t') {
		if c == "" {
			c = strconv.QuoteRune('\t')
		}
		return fmt.Sprintf("path holds the control character %s", c)
	}
	if os == OSLinux {
		if i := strings.IndexAny(prog, "$\"'\\"); i >= 0 {
			r, _ := utf8.DecodeRuneInString(prog[i:])
			return fmt.Sprintf("path holds %s, which systemd cannot take in the program path of ExecStart=", strconv.QuoteRune(r))
		}
	}
	return ""
}

// controlFor is controlOtherThanTab for a value of a unit of os: a
// property list (darwin) also carries a line feed as it is.
func controlFor(s, os string) string {
	if os == OSDarwin {
		s = strings.ReplaceAll(s, "\n", "")
	}
	return controlOtherThanTab(s)
}

// controlOtherThanTab returns the first C0 control character (other than
// TAB) or DEL in s, quoted, or "".
func controlOtherThanTab(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return strconv.QuoteRune(rune(c))
		}
	}
	return ""
}

// unitPathSegment is the channel's rule for one segment of a unit path.
func unitPathSegment(seg string) bool {
	if seg == "" || seg[0] == '-' {
		return false
	}
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("._@:+,%=-", c) >= 0:
		default:
			return false
		}
	}
	return true
}

func sortedEnvNames(env map[string]string) []string {
	if len(env) == 0 {
		return nil
	}
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// ValidUnitEscapes reports whether every backslash of unit starts a systemd
// unit name escape: \x and two hex digits (dev-mapper-vg\x2droot).
func ValidUnitEscapes(unit string) bool {
	for i := 0; i < len(unit); i++ {
		if unit[i] != '\\' {
			continue
		}
		if i+3 >= len(unit) || unit[i+1] != 'x' || !isHex(unit[i+2]) || !isHex(unit[i+3]) {
			return false
		}
		i += 3
	}
	return true
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
