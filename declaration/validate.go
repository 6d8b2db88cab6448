package declaration

import (
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Violation is one rule a declaration breaks, at the field path of the
// rule: relative to the service ("exec_start_pre[0]", "env.FOO") when
// ValidateService reports it, or from the document's root
// ("targets[2].services[0].unit") once the registry has prefixed it. An
// empty path names the service as a whole.
type Violation struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

func (v Violation) String() string { return v.Path + ": " + v.Message }

// ValidateService checks one service's declaration for a target of goos
// (OSLinux or OSDarwin): its names, paths, arguments and environment, its
// unit settings in the grammar of goos's init system, and the size limits
// the render, the channel and the host hold it to. It returns every
// violation, paths relative to the service, the rules first and the limits
// after them; nil means the declaration is valid. It does not modify s and
// is safe for concurrent use.
func ValidateService(s *Service, goos string) []Violation {
	return append(CheckRules(s, goos), CheckLimits(s, goos)...)
}

// CheckRules is the first half of ValidateService: every rule but the size
// limits. The registry reports a document's limits after its other rules,
// so it calls the halves apart.
func CheckRules(s *Service, goos string) []Violation {
	v := &validator{}
	v.service(s, goos, "")
	return v.out
}

// CheckLimits is the second half of ValidateService: the size limits.
func CheckLimits(s *Service, goos string) []Violation {
	v := &validator{}
	v.serviceLimits(s, goos, "")
	return v.out
}

// validator gathers violations. Its rules build each path from the
// service's own, "", as p+".field", so add drops the leading dot.
type validator struct{ out []Violation }

func (v *validator) add(path, format string, args ...any) {
	v.out = append(v.out, Violation{Path: strings.TrimPrefix(path, "."), Message: fmt.Sprintf(format, args...)})
}

var (
	lowerAlnum  = Chars("a-z0-9")
	anyAlnum    = Chars("A-Za-z0-9")
	serviceRest = Chars("A-Za-z0-9_.@-")
	productRest = Chars("a-z0-9_.-")
	envFirst    = Chars("A-Za-z_")
	envRest     = Chars("A-Za-z0-9_")
	anyAlnumDsh = Chars("A-Za-z0-9-")
	userFirst   = Chars("A-Za-z_")
	userRest    = Chars("A-Za-z0-9_.-")
	digits      = Chars("0-9")
)

// ValidServiceName reports whether s is a service name: a letter or digit
// first, then letters, digits, '_', '.', '@' and '-', at most 128 bytes.
func ValidServiceName(s string) bool { return Grammar(s, anyAlnum, serviceRest, 128) }

func at(base, field string, i int) string { return base + "." + field + "[" + strconv.Itoa(i) + "]" }

func (v *validator) service(s *Service, os, p string) {
	switch {
	case s.Name == "":
		v.add(p+".name", "missing")
	case !ValidServiceName(s.Name):
		v.add(p+".name", "%q is not a service name (letters, digits, '_', '.', '@', '-'; at most 128)", s.Name)
	}
	switch {
	case s.Unit == "":
		v.add(p+".unit", "missing; the systemd unit name or launchd label")
	case os != OSLinux && os != OSDarwin:
		// the target's os is reported on its own
	case s.Program != "":
		// A complete declaration is rendered and installed.
		if err := CheckServiceUnit(os, s.Unit); err != nil {
			v.add(p+".unit", "%s", err)
		}
	default:
		if err := CheckUnitName(os, s.Unit); err != nil {
			v.add(p+".unit", "%s", err)
		}
	}
	scopeOK := true
	switch s.Scope {
	case "", ScopeSystem, ScopeUser:
	default:
		scopeOK = false
		v.add(p+".scope", "must be system or user, got %q", s.Scope)
	}
	if s.UnitPath != "" {
		if msg := PathProblem(s.UnitPath); msg != "" {
			v.add(p+".unit_path", "%s", msg)
		} else if scopeOK && (os == OSLinux || os == OSDarwin) {
			if err := CheckUnitPath(os, s.EffectiveScope(), s.Unit, s.UnitPath); err != nil {
				v.add(p+".unit_path", "%s", err)
			}
		}
	}
	if s.Program != "" {
		if msg := PathProblem(s.Program); msg != "" {
			v.add(p+".program", "%s", msg)
		}
	} else if len(s.Args) > 0 {
		v.add(p+".args", "given without program; args[0] is not the program, set program")
	}
	for i, a := range s.Args {
		if msg := ArgProblem(a); msg != "" {
			v.add(fmt.Sprintf("%s.args[%d]", p, i), "%s", msg)
		}
	}
	secret := make(map[int]bool, len(s.SecretArgs))
	for k, i := range s.SecretArgs {
		switch {
		case i < 0 || i >= len(s.Args):
			v.add(fmt.Sprintf("%s.secret_args[%d]", p, k), "index %d is not an argument (args has %d; indexes start at 0)", i, len(s.Args))
		case secret[i]:
			v.add(fmt.Sprintf("%s.secret_args[%d]", p, k), "index %d is named twice", i)
		}
		secret[i] = true
	}
	var names []string
	if len(s.Env) > 0 {
		names = make([]string, 0, len(s.Env))
		for k := range s.Env {
			names = append(names, k)
		}
		sort.Strings(names)
	}
	for _, k := range names {
		if err := CheckEnvName(k); err != nil {
			v.add(fmt.Sprintf("%s.env[%q]", p, k), "%s", err)
			continue
		}
		val := s.Env[k]
		switch {
		case os == OSDarwin && strings.ContainsAny(val, "\x00\r"):
			// A property list carries a line feed; NUL and CR it cannot
			// carry as they are.
			v.add(p+".env."+k, "value contains NUL or a carriage return")
		case os != OSDarwin && hasControl(val):
			v.add(p+".env."+k, "value contains NUL or a line break")
		case !utf8.ValidString(val):
			v.add(p+".env."+k, "value is not valid UTF-8")
		}
	}
	if s.Product != "" && !Grammar(s.Product, lowerAlnum, productRest, 64) {
		v.add(p+".product", "%q is not a product name (lowercase letters, digits, '_', '.', '-')", s.Product)
	}
	v.protocol(s.Protocol, p)
	v.unitSettings(s, os, p) // validate_unit.go
	if s.IncompleteReason != "" {
		switch {
		case s.Program != "":
			v.add(p+".incomplete_reason", "set on a complete declaration (program is set)")
		case strings.ContainsRune(s.IncompleteReason, 0) || !utf8.ValidString(s.IncompleteReason):
			v.add(p+".incomplete_reason", "contains NUL or invalid UTF-8")
		}
	}
}

// PathProblem says why p is not an absolute, clean path, or "" when it
// is one. The registry holds an alert command's program to it too.
func PathProblem(p string) string {
	switch {
	case hasControl(p):
		return "path contains NUL or a line break"
	case !utf8.ValidString(p):
		return "path is not valid UTF-8"
	case !strings.HasPrefix(p, "/"):
		return fmt.Sprintf("%q is not an absolute path", p)
	case hasDotDot(p):
		return fmt.Sprintf("%q contains '..'", p)
	case path.Clean(p) != p:
		return fmt.Sprintf("%q is not clean (want %q)", p, path.Clean(p))
	}
	return ""
}

// hasControl reports whether s holds NUL, CR or LF.
func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == 0 || c == '\n' || c == '\r' {
			return true
		}
	}
	return false
}

func hasDotDot(p string) bool {
	if !strings.Contains(p, "..") {
		return false
	}
	for {
		seg, rest, more := strings.Cut(p, "/")
		if seg == ".." {
			return true
		}
		if !more {
			return false
		}
		p = rest
	}
}

// ArgProblem says why a is no argument a program can be given (it holds
// NUL or is not UTF-8), or "".
func ArgProblem(a string) string {
	switch {
	case strings.ContainsRune(a, 0):
		return "contains NUL"
	case !utf8.ValidString(a):
		return "is not valid UTF-8"
	}
	return ""
}
