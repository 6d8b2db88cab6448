package channel

import (
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/wisent/stado/declaration"
	"github.com/wisent/stado/registry"
)

// Verb is one of the closed set of things the remote program does.
type Verb string

// The verbs of `stado host channel`.
const (
	VerbEnsure          Verb = "ensure"           // SCOPE UNIT MODE, the request document on stdin
	VerbUnitInstall     Verb = "unit-install"     // SCOPE UNIT [PATH], unit content on stdin
	VerbUnitRemove      Verb = "unit-remove"      // SCOPE UNIT [PATH] [launchd-domain=DOMAIN]
	VerbUnitStart       Verb = "unit-start"       // SCOPE UNIT [launchd-domain=DOMAIN]
	VerbUnitStop        Verb = "unit-stop"        // SCOPE UNIT [launchd-domain=DOMAIN]
	VerbUnitRestart     Verb = "unit-restart"     // SCOPE UNIT [launchd-domain=DOMAIN]
	VerbUnitShow        Verb = "unit-show"        // SCOPE UNIT [UNIT...]
	VerbUnitFile        Verb = "unit-file"        // SCOPE UNIT
	VerbUnitLogs        Verb = "unit-logs"        // SCOPE UNIT LINES
	VerbUnitEnv         Verb = "unit-env"         // SCOPE UNIT
	VerbUnitList        Verb = "unit-list"        // SCOPE
	VerbPortOwner       Verb = "port-owner"       // PORT
	VerbRepairStep      Verb = "repair-step"      // STEP [KEY=VALUE...]
	VerbVersion         Verb = "version"          // (no arguments)
	VerbSession         Verb = "session"          // (no arguments) many verb calls in framed documents on stdin/stdout
	VerbVerify          Verb = "verify"           // (no arguments) the request document on stdin; reads only
	VerbRecoveries      Verb = "recoveries"       // (no arguments) reads the host's recovery register
	VerbReleaseActivate Verb = "release-activate" // (no arguments) the request document on stdin
	VerbReleaseState    Verb = "release-state"    // (no arguments) the request document on stdin; reads only
)

// Verbs lists every verb in the order docs/channel.md describes them.
var Verbs = []Verb{
	VerbEnsure, VerbUnitInstall, VerbUnitRemove, VerbUnitStart, VerbUnitStop, VerbUnitRestart,
	VerbUnitShow, VerbUnitFile, VerbUnitLogs, VerbUnitEnv, VerbUnitList, VerbPortOwner,
	VerbRepairStep, VerbVersion, VerbSession,
	VerbVerify,
	VerbRecoveries,
	VerbReleaseActivate, VerbReleaseState,
}

// VerbNames is every verb of Verbs, space separated in that order: the list
// help text prints, so it cannot drift from the grammar.
func VerbNames() string {
	names := make([]string, len(Verbs))
	for i, v := range Verbs {
		names[i] = string(v)
	}
	return strings.Join(names, " ")
}

// Bounds of verb arguments.
const (
	MaxLogLines      = 10000   // unit-logs LINES upper bound
	MaxShowUnits     = 64      // unit-show units per call
	MaxUnitBytes     = 1 << 20 // unit-install content on stdin
	MaxEnvPairs      = 32      // repair-step KEY=VALUE pairs
	MaxEnvValueBytes = 4096    // one repair-step value
)

// Scopes of a unit.
const (
	ScopeSystem = "system"
	ScopeUser   = "user"
)

// EnvVar is one KEY=VALUE pair of repair-step, in the order given.
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Command is one validated call of the remote program. Only the fields its
// verb uses are set.
type Command struct {
	Verb  Verb     `json:"verb"`
	Scope string   `json:"scope,omitempty"`
	Units []string `json:"units,omitempty"` // one unit, or 1..MaxShowUnits for unit-show
	Path  string   `json:"path,omitempty"`
	Lines int      `json:"lines,omitempty"`
	Port  int      `json:"port,omitempty"`
	Step  string   `json:"step,omitempty"`
	Env   []EnvVar `json:"env,omitempty"`
	Mode  string   `json:"mode,omitempty"` // ensure: ModeApply or ModePlan
	// Domain is the launchd domain a user unit is acted on in (the
	// target's launchd_domain), on the unit verbs that act: unit-start,
	// unit-stop, unit-restart, unit-remove.
	Domain string `json:"launchd_domain,omitempty"`
}

// DomainWord prefixes the optional last word of the acting unit verbs
// that carries the launchd domain: launchd-domain=gui/501.
const DomainWord = "launchd-domain="

// takesDomain reports whether verb's words may end with a DomainWord.
func takesDomain(v Verb) bool {
	return v == VerbUnitStart || v == VerbUnitStop || v == VerbUnitRestart || v == VerbUnitRemove
}

// Unit returns the command's unit, or "" when it has none.
func (c Command) Unit() string {
	if len(c.Units) == 0 {
		return ""
	}
	return c.Units[0]
}

// EnvMap returns the repair-step pairs as a map (names are unique).
func (c Command) EnvMap() map[string]string {
	m := make(map[string]string, len(c.Env))
	for _, e := range c.Env {
		m[e.Name] = e.Value
	}
	return m
}

// Argv returns the command's words, verb first, such that ParseArgv(c.Argv())
// yields c again. It does not validate: build Commands with the constructors
// below or ParseArgv.
func (c Command) Argv() []string {
	argv := []string{string(c.Verb)}
	switch c.Verb {
	case VerbEnsure:
		argv = append(argv, c.Scope, c.Unit(), c.Mode)
	case VerbUnitInstall, VerbUnitRemove:
		argv = append(argv, c.Scope, c.Unit())
		if c.Path != "" {
			argv = append(argv, c.Path)
		}
	case VerbUnitStart, VerbUnitStop, VerbUnitRestart, VerbUnitEnv, VerbUnitFile:
		argv = append(argv, c.Scope, c.Unit())
	case VerbUnitShow:
		argv = append(append(argv, c.Scope), c.Units...)
	case VerbUnitLogs:
		argv = append(argv, c.Scope, c.Unit(), strconv.Itoa(c.Lines))
	case VerbUnitList:
		argv = append(argv, c.Scope)
	case VerbPortOwner:
		argv = append(argv, strconv.Itoa(c.Port))
	case VerbRepairStep:
		argv = append(argv, c.Step)
		for _, e := range c.Env {
			argv = append(argv, e.Name+"="+e.Value)
		}
	}
	if c.Domain != "" && takesDomain(c.Verb) {
		argv = append(argv, DomainWord+c.Domain)
	}
	return argv
}

// ParseCommand splits an SSH_ORIGINAL_COMMAND by the channel's quoting
// grammar (plain words and single quotes only) and validates it as one verb
// call. A leading "stado host channel" (or "/abs/path/stado host channel")
// is dropped, so a client may send the same line whether or not the key is
// restricted to the forced command. Every error is a *Refusal.
func ParseCommand(original string) (Command, error) {
	words, err := splitWords(original)
	if err != nil {
		return Command{}, err
	}
	return parseWords(stripProgram(words))
}

// ParseArgv validates argv (verb first, no program prefix) as one verb
// call, for `stado host channel VERB ARGS...` run directly. Words are held to
// the same byte rules as a quoted command line. Every error is a *Refusal.
func ParseArgv(argv []string) (Command, error) {
	if len(argv) == 0 {
		return Command{}, refusef(CodeEmptyCommand, "no command: the channel runs one of its verbs, never a login shell")
	}
	if len(argv) > MaxWords {
		return Command{}, refusef(CodeTooLong, "more than %d words", MaxWords)
	}
	for i, w := range argv {
		if err := checkWordBytes(w); err != nil {
			return Command{}, err
		}
		if strings.IndexByte(w, '\'') >= 0 {
			return Command{}, refusef(CodeForbiddenCharacter, "word %d holds a single quote", i+1)
		}
		if hasDotDotSegment(w) {
			return Command{}, refusef(CodePathTraversal, "word %d %s holds a \"..\" segment", i+1, strconv.Quote(w))
		}
	}
	return parseWords(argv)
}

var programPath = regexp.MustCompile(`^(/[A-Za-z0-9._+-]+)*/stado$`)

func stripProgram(words []string) []string {
	if len(words) >= 3 && (words[0] == "stado" || programPath.MatchString(words[0])) &&
		words[1] == "host" && words[2] == "channel" {
		return words[3:]
	}
	return words
}

func parseWords(words []string) (Command, error) {
	if len(words) == 0 {
		return Command{}, refusef(CodeEmptyCommand, "no verb after the program name")
	}
	verb, args := Verb(words[0]), words[1:]
	c := Command{Verb: verb}
	if takesDomain(verb) && len(args) > 0 {
		if d, ok := strings.CutPrefix(args[len(args)-1], DomainWord); ok {
			if !registry.ValidLaunchdDomain(d) {
				return Command{}, refusef(CodeInvalidScope, "launchd domain %s is not system, gui/<uid> or user/<uid>", strconv.Quote(d))
			}
			c.Domain, args = d, args[:len(args)-1]
		}
	}
	for _, a := range args {
		if strings.HasPrefix(a, DomainWord) {
			return Command{}, refusef(CodeInvalidArguments, "%s%s: a launchd domain is the last word of %s, once", DomainWord, strconv.Quote(strings.TrimPrefix(a, DomainWord)), domainVerbs())
		}
	}
	need := func(n int, form string) error {
		if len(args) != n {
			return refusef(CodeInvalidArguments, "%s takes %s, got %d argument(s)", verb, form, len(args))
		}
		return nil
	}
	var err error
	switch verb {
	case VerbEnsure:
		if err = need(3, "SCOPE UNIT MODE"); err != nil {
			return Command{}, err
		}
		if c.Scope, c.Units, err = scopeAndUnits(args[:2]); err != nil {
			return Command{}, err
		}
		if args[2] != ModeApply && args[2] != ModePlan {
			return Command{}, refusef(CodeInvalidArguments, "ensure mode %s is neither %s nor %s", strconv.Quote(args[2]), ModeApply, ModePlan)
		}
		c.Mode = args[2]
	case VerbUnitInstall, VerbUnitRemove:
		if len(args) != 2 && len(args) != 3 {
			return Command{}, refusef(CodeInvalidArguments, "%s takes SCOPE UNIT [PATH], got %d argument(s)", verb, len(args))
		}
		if c.Scope, c.Units, err = scopeAndUnits(args[:2]); err != nil {
			return Command{}, err
		}
		if len(args) == 3 {
			if err = checkUnitPath(c.Scope, args[1], args[2]); err != nil {
				return Command{}, err
			}
			c.Path = args[2]
		}
	case VerbUnitStart, VerbUnitStop, VerbUnitRestart, VerbUnitEnv, VerbUnitFile:
		if err = need(2, "SCOPE UNIT"); err != nil {
			return Command{}, err
		}
		if c.Scope, c.Units, err = scopeAndUnits(args[:2]); err != nil {
			return Command{}, err
		}
	case VerbUnitShow:
		if len(args) < 2 || len(args) > MaxShowUnits+1 {
			return Command{}, refusef(CodeInvalidArguments, "%s takes SCOPE and 1 to %d units, got %d argument(s)", verb, MaxShowUnits, len(args))
		}
		if c.Scope, c.Units, err = scopeAndUnits(args); err != nil {
			return Command{}, err
		}
	case VerbUnitLogs:
		if err = need(3, "SCOPE UNIT LINES"); err != nil {
			return Command{}, err
		}
		if c.Scope, c.Units, err = scopeAndUnits(args[:2]); err != nil {
			return Command{}, err
		}
		n, ok := parseDecimal(args[2], MaxLogLines)
		if !ok {
			return Command{}, refusef(CodeInvalidLines, "lines %s is not a whole number from 1 to %d", strconv.Quote(args[2]), MaxLogLines)
		}
		c.Lines = n
	case VerbUnitList:
		if err = need(1, "SCOPE"); err != nil {
			return Command{}, err
		}
		if c.Scope, err = parseScope(args[0]); err != nil {
			return Command{}, err
		}
	case VerbPortOwner:
		if err = need(1, "PORT"); err != nil {
			return Command{}, err
		}
		n, ok := parseDecimal(args[0], 65535)
		if !ok {
			return Command{}, refusef(CodeInvalidPort, "port %s is not a whole number from 1 to 65535", strconv.Quote(args[0]))
		}
		c.Port = n
	case VerbRepairStep:
		if len(args) < 1 || len(args) > MaxEnvPairs+1 {
			return Command{}, refusef(CodeInvalidArguments, "%s takes STEP and up to %d KEY=VALUE pairs, got %d argument(s)", verb, MaxEnvPairs, len(args))
		}
		if !stepName.MatchString(args[0]) {
			return Command{}, refusef(CodeInvalidStep, "repair step %s is not a step name (lowercase letters, digits and '-', starting with a letter)", strconv.Quote(args[0]))
		}
		c.Step = args[0]
		seen := map[string]bool{}
		for _, kv := range args[1:] {
			e, err := parseEnvVar(kv)
			if err != nil {
				return Command{}, err
			}
			if seen[e.Name] {
				return Command{}, refusef(CodeInvalidEnv, "environment name %s given twice", e.Name)
			}
			seen[e.Name] = true
			c.Env = append(c.Env, e)
		}
	case VerbVersion, VerbSession, VerbVerify, VerbRecoveries, VerbReleaseActivate, VerbReleaseState:
		if err = need(0, "no arguments"); err != nil {
			return Command{}, err
		}
	default:
		return Command{}, refusef(CodeUnknownVerb, "unknown verb %s: the channel runs only %s", strconv.Quote(string(verb)), verbList())
	}
	if c.Domain != "" && c.Scope != ScopeUser {
		return Command{}, refusef(CodeInvalidScope, "a launchd domain places user units, and %s is a %s unit", c.Unit(), c.Scope)
	}
	return c, nil
}

func domainVerbs() string {
	return strings.Join([]string{string(VerbUnitStart), string(VerbUnitStop), string(VerbUnitRestart), string(VerbUnitRemove)}, ", ")
}

func verbList() string {
	s := make([]string, len(Verbs))
	for i, v := range Verbs {
		s[i] = string(v)
	}
	return strings.Join(s, ", ")
}

// scopeAndUnits reads SCOPE UNIT... (at least one unit).
func scopeAndUnits(args []string) (string, []string, error) {
	scope, err := parseScope(args[0])
	if err != nil {
		return "", nil, err
	}
	for _, u := range args[1:] {
		if err := checkUnit(u); err != nil {
			return "", nil, err
		}
	}
	return scope, append([]string(nil), args[1:]...), nil
}

func parseScope(s string) (string, error) {
	if s == ScopeSystem || s == ScopeUser {
		return s, nil
	}
	return "", refusef(CodeInvalidScope, "scope %s is neither system nor user", strconv.Quote(s))
}

// parseDecimal accepts 1..max written without sign or leading zeros.
func parseDecimal(s string, max int) (int, bool) {
	if len(s) == 0 || len(s) > 6 || s[0] == '0' {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, n >= 1 && n <= max
}

var (
	stepName    = regexp.MustCompile(`^[a-z][a-z0-9-]{0,63}$`)
	pathSegment = regexp.MustCompile(`^[A-Za-z0-9._@:+,%=-]+$`)
)

// unitOS names the init system a unit identity belongs to: "linux" for a
// systemd unit name, "darwin" for a launchd label, "" for neither (the
// registry owns both grammars).
func unitOS(u string) string {
	switch {
	case declaration.CheckUnitName(registry.OSLinux, u) == nil:
		return registry.OSLinux
	case declaration.CheckUnitName(registry.OSDarwin, u) == nil:
		return registry.OSDarwin
	}
	return ""
}

func checkUnit(u string) error {
	if unitOS(u) != "" {
		return nil
	}
	return refusef(CodeInvalidUnit, "unit %s is neither a systemd unit name (name%s) nor a reverse-DNS launchd label", strconv.Quote(u), strings.Join(declaration.SystemdUnitTypes, ", name"))
}

// CheckUnitPath holds a unit path to the directories the channel writes
// in: a clean absolute path of plain segments, directly in the unit
// directory of the unit's init system and scope, named after the unit
// (declaration.CheckUnitPath). Every error is a *Refusal.
func CheckUnitPath(scope, unit, p string) error { return checkUnitPath(scope, unit, p) }

func checkUnitPath(scope, unit, p string) error {
	bad := func(why string) error {
		return refusef(CodeInvalidPath, "path %s: %s", strconv.Quote(p), why)
	}
	if !strings.HasPrefix(p, "/") || path.Clean(p) != p {
		return bad("not a clean absolute path")
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if !pathSegment.MatchString(seg) || strings.HasPrefix(seg, "-") {
			return bad("a path segment holds a character outside letters, digits and ._@:+,%=-")
		}
	}
	goos := unitOS(unit)
	if goos == "" {
		return checkUnit(unit)
	}
	if err := declaration.CheckUnitPath(goos, scope, unit, p); err != nil {
		return bad(err.Error())
	}
	return nil
}

func parseEnvVar(kv string) (EnvVar, error) {
	name, value, ok := strings.Cut(kv, "=")
	if !ok {
		return EnvVar{}, refusef(CodeInvalidEnv, "argument %s is not KEY=VALUE", strconv.Quote(kv))
	}
	if err := declaration.CheckEnvName(name); err != nil {
		return EnvVar{}, refusef(CodeInvalidEnv, "environment name %s", err)
	}
	if declaration.ReservedEnvName(name) {
		return EnvVar{}, refusef(CodeInvalidEnv, "environment name %s may not be set through the channel", name)
	}
	if len(value) > MaxEnvValueBytes {
		return EnvVar{}, refusef(CodeInvalidEnv, "value of %s is %d bytes, the bound is %d", name, len(value), MaxEnvValueBytes)
	}
	return EnvVar{Name: name, Value: value}, nil
}

// CheckOS refuses a command whose unit identity or path belongs to the other
// init system: systemd names and directories on linux, launchd labels and
// directories on darwin.
func (c Command) CheckOS(goos string) error {
	if goos != registry.OSLinux && goos != registry.OSDarwin {
		return refusef(CodeInvalidUnit, "this host's OS %s has no init system the channel knows", strconv.Quote(goos))
	}
	if c.Domain != "" && goos != registry.OSDarwin {
		return refusef(CodeInvalidScope, "launchd domain %s is for a darwin host, and this host runs %s", c.Domain, goos)
	}
	for _, u := range c.Units {
		if declaration.CheckUnitName(goos, u) != nil {
			kind := map[string]string{registry.OSLinux: "a systemd unit name, and this host runs systemd", registry.OSDarwin: "a launchd label, and this host runs launchd"}[goos]
			return refusef(CodeInvalidUnit, "unit %s is not %s", strconv.Quote(u), kind)
		}
	}
	if c.Path != "" {
		if _, ok := declaration.ScopeOfUnitPath(goos, c.Path); !ok {
			return refusef(CodeInvalidPath, "path %s is not a unit directory of this host's init system", strconv.Quote(c.Path))
		}
	}
	return nil
}
