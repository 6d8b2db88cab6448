package units

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/coreos/go-systemd/v22/unit"
	"howett.net/plist"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/declaration"
)

// The one program search path each OS's rendered units carry, never the
// installing shell's. Declared environment is merged over it.
const (
	PathLinux  = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	PathDarwin = "/opt/homebrew/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
)

// RestartDelaySeconds is how long either supervisor waits before starting
// a program again after it exited (systemd RestartSec, launchd
// ThrottleInterval).
const RestartDelaySeconds = 2

// Keys stado adds to a unit to carry the declaration's name and product, so
// a rendered unit parses back to the declaration it came from. systemd
// ignores X- keys; launchd ignores keys it does not know.
const (
	systemdNameKey    = "X-Stado-Service"
	systemdProductKey = "X-Stado-Product"
	plistNameKey      = "StadoService"
	plistProductKey   = "StadoProduct"
)

// FixedPath returns the PATH rendered units carry on goos.
func FixedPath(goos string) string {
	if goos == declaration.OSDarwin {
		return PathDarwin
	}
	return PathLinux
}

// Render renders s for goos ("linux" or "darwin"); home is the home
// directory of the account the unit belongs to (it places launchd log files).
// A declaration naming a product (s.Product) renders with the shipped
// product's unit settings for goos merged under its own
// (catalog.WithProductSettings), so a hand-written declaration of the
// Oarbank agent keeps Delegate=yes and KillMode=process unless it
// overrides them. Errors are *IncompleteError, *FieldError, or an
// unknown-OS error.
func Render(s declaration.Service, goos, home string) ([]byte, error) {
	s = catalog.Shipped().WithProductSettings(s, goos)
	switch goos {
	case declaration.OSLinux:
		return RenderSystemd(s)
	case declaration.OSDarwin:
		return RenderLaunchd(s, home)
	default:
		return nil, &FieldError{Field: "os", Reason: fmt.Sprintf("%q is neither linux nor darwin", goos)}
	}
}

// UnitPath returns where s's unit file lives on goos: the declared
// UnitPath, or declaration.DefaultUnitPath for its scope and home. Any goos
// other than darwin is taken as linux.
func UnitPath(s declaration.Service, goos, home string) string {
	if s.UnitPath != "" {
		return s.UnitPath
	}
	if goos != declaration.OSDarwin {
		goos = declaration.OSLinux
	}
	return declaration.DefaultUnitPath(goos, s.EffectiveScope(), home, s.Unit)
}

// LaunchdLogPath is where a rendered launchd job writes its standard output
// and error: <home>/.stado/logs/<label>.log.
func LaunchdLogPath(home, label string) string {
	return filepath.Join(home, ".stado", "logs", label+".log")
}

// DefaultName is the name a parsed unit gets when it carries none of its
// own: the systemd unit without ".service", or the last dot-separated part
// of a launchd label. What a service name cannot hold is written so it
// can: a systemd escape \xHH becomes the byte it stands for when a name
// may hold it, and that byte or any other (a space of a launchd label)
// becomes '_' otherwise.
func DefaultName(unitID, goos string) string {
	name := strings.TrimSuffix(unitID, ".service")
	if goos == declaration.OSDarwin {
		name = unitID
		if i := strings.LastIndexByte(unitID, '.'); i >= 0 && i < len(unitID)-1 {
			name = unitID[i+1:]
		}
	}
	if declaration.ValidServiceName(name) {
		return name
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c == '\\' && i+3 < len(name) && name[i+1] == 'x' {
			if hi, ok1 := unhex(name[i+2]); ok1 {
				if lo, ok2 := unhex(name[i+3]); ok2 {
					c = hi<<4 | lo
					i += 3
				}
			}
		}
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '_' || c == '.' || c == '@' || c == '-':
			if b.Len() == 0 {
				c = '_'
			}
		default:
			c = '_'
		}
		b.WriteByte(c)
	}
	return b.String()
}

// checkValue refuses what no unit file can carry faithfully.
func checkValue(field, v string) error {
	switch {
	case strings.ContainsRune(v, 0):
		return &FieldError{Field: field, Reason: "contains a NUL byte"}
	case strings.ContainsAny(v, "\n\r"):
		return &FieldError{Field: field, Reason: "contains a newline"}
	case !utf8.ValidString(v):
		return &FieldError{Field: field, Reason: "is not valid UTF-8"}
	}
	return nil
}

// checkPlistString is checkValue for a string of a property list, which
// carries a line feed (XML keeps it as written) but not a carriage return
// (an XML reader turns it into a line feed).
func checkPlistString(field, v string) error {
	return checkValue(field, strings.ReplaceAll(v, "\n", ""))
}

// validate checks a declaration before anything is serialised.
func validate(s declaration.Service, goos string) error {
	if s.Program == "" {
		return &IncompleteError{Service: s.Name, Unit: s.Unit, Reason: s.IncompleteReason}
	}
	if s.Name == "" {
		return &FieldError{Field: "name", Reason: "is empty"}
	}
	if err := checkValue("name", s.Name); err != nil {
		return err
	}
	if err := checkValue("product", s.Product); err != nil {
		return err
	}
	if goos != declaration.OSDarwin {
		goos = declaration.OSLinux
	}
	if err := declaration.CheckServiceUnit(goos, s.Unit); err != nil {
		return &FieldError{Field: "unit", Reason: err.Error()}
	}
	if err := checkValue("program", s.Program); err != nil {
		return err
	}
	if !strings.HasPrefix(s.Program, "/") {
		return &FieldError{Field: "program", Reason: fmt.Sprintf("%q is not an absolute path", s.Program)}
	}
	// A property list carries a line feed in an argument or a variable;
	// a systemd unit line never does.
	check := checkValue
	if goos == declaration.OSDarwin {
		check = checkPlistString
	}
	for i, a := range s.Args {
		if err := check(fmt.Sprintf("args[%d]", i), a); err != nil {
			return err
		}
	}
	for _, k := range sortedKeys(s.Env) {
		if err := declaration.CheckEnvName(k); err != nil {
			return &FieldError{Field: "env." + k, Reason: err.Error()}
		}
		if err := check("env."+k, s.Env[k]); err != nil {
			return err
		}
	}
	switch s.Scope {
	case "", declaration.ScopeSystem, declaration.ScopeUser:
	default:
		return &FieldError{Field: "scope", Reason: fmt.Sprintf("%q is neither system nor user", s.Scope)}
	}
	return validateSettings(s, goos)
}

// validateSettings checks s's unit settings, and the rest of its
// declaration, for a target of goos (declaration.ValidateService); the
// first violation that names a field is the error. The unit path is the
// caller's to choose here, so it is not checked.
func validateSettings(s declaration.Service, goos string) error {
	s.UnitPath = ""
	for _, v := range declaration.ValidateService(&s, goos) {
		if v.Path == "" {
			continue // the command's size as a whole: the channel holds it to its limit
		}
		return &FieldError{Field: v.Path, Reason: v.Message}
	}
	for k, x := range s.LaunchdKeys {
		if _, err := ParsePlistValueXML(x); err != nil {
			return &FieldError{Field: fmt.Sprintf("launchd_keys[%q]", k), Reason: err.Error()}
		}
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// mergedEnv is the declared environment, over the fixed PATH when stado's
// defaults apply.
func mergedEnv(s declaration.Service, goos string) map[string]string {
	env := map[string]string{}
	if s.UsesStadoDefaults() {
		env["PATH"] = FixedPath(goos)
	}
	for k, v := range s.Env {
		env[k] = v
	}
	return env
}

// restartWord is the systemd Restart= value s renders, "" for none.
func restartWord(s declaration.Service) string {
	switch {
	case s.Restart != "":
		return s.Restart
	case s.KeepsAlive():
		return "always"
	case s.UsesStadoDefaults():
		return "no"
	}
	return "" // no Restart= is systemd's no
}

// RenderSystemd renders s as a systemd service unit. Every field of the
// declaration becomes its directive; with stado's defaults (stado_defaults
// unset or true) what is left unset is filled in: the description "stado
// service NAME", no start limit, the fixed PATH, Restart=always (no when
// keep_alive is false), RestartSec=2 and WantedBy multi-user.target (system
// scope) or default.target (user scope). With stado_defaults false nothing
// is added, and a declaration without wanted_by or required_by has no
// [Install] section. Kept systemd_keys follow the typed keys of their
// section, in order. Errors are *IncompleteError or *FieldError; nothing is
// rendered then.
func RenderSystemd(s declaration.Service) ([]byte, error) {
	if err := validate(s, declaration.OSLinux); err != nil {
		return nil, err
	}
	defaults := s.UsesStadoDefaults()
	argv := append([]string{s.Program}, s.Args...)
	words := make([]string, len(argv))
	for i, a := range argv {
		if s.ExpandEnv {
			words[i] = quoteExecArgExpanding(a)
		} else {
			words[i] = QuoteExecArg(a)
		}
	}
	var opts []*unit.UnitOption
	add := func(section, key, value string) { opts = append(opts, unit.NewUnitOption(section, key, value)) }
	addAll := func(section, key string, values []string) {
		for _, v := range values {
			add(section, key, v)
		}
	}
	addNames := func(section, key string, names []string) {
		if len(names) > 0 {
			add(section, key, strings.Join(names, " "))
		}
	}
	kept := func(section string) {
		for _, k := range s.SystemdKeys {
			if k.Section == section {
				add(section, k.Key, k.Value)
			}
		}
	}
	desc := s.Description
	if desc == "" && defaults {
		desc = "stado service " + s.Name
	}
	if desc != "" {
		add("Unit", "Description", EscapeSpecifiers(desc))
	}
	if s.Name != DefaultName(s.Unit, declaration.OSLinux) {
		add("Unit", systemdNameKey, s.Name)
	}
	if s.Product != "" {
		add("Unit", systemdProductKey, s.Product)
	}
	limitInterval := s.StartLimitIntervalSec
	if limitInterval == "" && defaults {
		limitInterval = "0"
	}
	if limitInterval != "" {
		add("Unit", "StartLimitIntervalSec", limitInterval)
	}
	if s.StartLimitBurst != nil {
		add("Unit", "StartLimitBurst", strconv.Itoa(*s.StartLimitBurst))
	}
	addNames("Unit", "After", s.After)
	addNames("Unit", "Before", s.Before)
	addNames("Unit", "Wants", s.Wants)
	addNames("Unit", "Requires", s.Requires)
	kept("Unit")
	if s.Type != "" {
		add("Service", "Type", s.Type)
	}
	if s.PIDFile != "" {
		add("Service", "PIDFile", s.PIDFile)
	}
	addAll("Service", "ExecStartPre", s.ExecStartPre)
	add("Service", "ExecStart", s.ExecStartPrefix+strings.Join(words, " "))
	addAll("Service", "ExecStartPost", s.ExecStartPost)
	addAll("Service", "ExecReload", s.ExecReload)
	addAll("Service", "ExecStop", s.ExecStop)
	addAll("Service", "ExecStopPost", s.ExecStopPost)
	env := mergedEnv(s, declaration.OSLinux)
	for _, k := range sortedKeys(env) {
		add("Service", "Environment", QuoteEnvAssignment(k, env[k]))
	}
	addAll("Service", "EnvironmentFile", s.EnvironmentFiles)
	if s.WorkingDirectory != "" {
		add("Service", "WorkingDirectory", s.WorkingDirectory)
	}
	if s.User != "" {
		add("Service", "User", s.User)
	}
	if s.Group != "" {
		add("Service", "Group", s.Group)
	}
	if s.UMask != "" {
		add("Service", "UMask", s.UMask)
	}
	if s.StdoutPath != "" {
		add("Service", "StandardOutput", "append:"+s.StdoutPath)
	}
	if s.StderrPath != "" {
		add("Service", "StandardError", "append:"+s.StderrPath)
	}
	if r := restartWord(s); r != "" {
		add("Service", "Restart", r)
	}
	restartSec := s.RestartSec
	if restartSec == "" && defaults {
		restartSec = strconv.Itoa(RestartDelaySeconds)
	}
	if restartSec != "" {
		add("Service", "RestartSec", restartSec)
	}
	if s.TimeoutStopSec != "" {
		add("Service", "TimeoutStopSec", s.TimeoutStopSec)
	}
	if s.WatchdogSec != "" {
		add("Service", "WatchdogSec", s.WatchdogSec)
	}
	if s.KillMode != "" {
		add("Service", "KillMode", s.KillMode)
	}
	if s.Delegate != nil {
		add("Service", "Delegate", yesNo(*s.Delegate))
	}
	if s.Nice != nil {
		add("Service", "Nice", strconv.Itoa(*s.Nice))
	}
	if s.IOSchedulingClass != "" {
		add("Service", "IOSchedulingClass", s.IOSchedulingClass)
	}
	if s.IOSchedulingPriority != nil {
		add("Service", "IOSchedulingPriority", strconv.Itoa(*s.IOSchedulingPriority))
	}
	for _, name := range sortedLimitNames(s.Limits) {
		l := s.Limits[name]
		v := l.Soft
		if l.Hard != l.Soft {
			v = l.Soft + ":" + l.Hard
		}
		add("Service", declaration.LimitNames[name][0], v)
	}
	kept("Service")
	wanted := s.WantedBy
	if len(wanted) == 0 && len(s.RequiredBy) == 0 && defaults {
		wanted = []string{"multi-user.target"}
		if s.EffectiveScope() == declaration.ScopeUser {
			wanted = []string{"default.target"}
		}
	}
	addNames("Install", "WantedBy", wanted)
	addNames("Install", "RequiredBy", s.RequiredBy)
	kept("Install")
	// X- sections, which systemd ignores, after [Install], in the order
	// they were first kept.
	var others []string
	for _, k := range s.SystemdKeys {
		switch k.Section {
		case "Unit", "Service", "Install":
		default:
			if !slices.Contains(others, k.Section) {
				others = append(others, k.Section)
			}
		}
	}
	for _, sec := range others {
		kept(sec)
	}
	return io.ReadAll(unit.Serialize(opts))
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func sortedLimitNames(m map[string]declaration.Limit) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// RenderLaunchd renders s as an XML launchd property list. Every field of
// the declaration becomes its key, and launchd_keys are written as kept.
// With stado's defaults (stado_defaults unset or true) what is left unset
// is filled in: the fixed PATH, KeepAlive, RunAtLoad true, ThrottleInterval
// 2 and standard output and error in LaunchdLogPath(home, label). With
// stado_defaults false nothing is added. Errors are *IncompleteError or
// *FieldError; nothing is rendered then.
func RenderLaunchd(s declaration.Service, home string) ([]byte, error) {
	if err := validate(s, declaration.OSDarwin); err != nil {
		return nil, err
	}
	defaults := s.UsesStadoDefaults()
	if defaults {
		if !strings.HasPrefix(home, "/") {
			return nil, &FieldError{Field: "home", Reason: fmt.Sprintf("%q is not an absolute path", home)}
		}
		if err := checkValue("home", home); err != nil {
			return nil, err
		}
	}
	job := map[string]any{
		"Label":            s.Unit,
		"ProgramArguments": append([]string{s.Program}, s.Args...),
	}
	for k, x := range s.LaunchdKeys {
		v, err := ParsePlistValueXML(x)
		if err != nil {
			return nil, &FieldError{Field: fmt.Sprintf("launchd_keys[%q]", k), Reason: err.Error()}
		}
		job[k] = v
	}
	if env := mergedEnv(s, declaration.OSDarwin); len(env) > 0 {
		job["EnvironmentVariables"] = env
	}
	switch s.Restart {
	case "":
		if _, kept := s.LaunchdKeys["KeepAlive"]; !kept {
			job["KeepAlive"] = s.KeepsAlive()
		}
	case "always":
		job["KeepAlive"] = true
	case "no":
		job["KeepAlive"] = false
	case "on-failure":
		job["KeepAlive"] = map[string]any{"SuccessfulExit": false}
	case "on-success":
		job["KeepAlive"] = map[string]any{"SuccessfulExit": true}
	case "on-abort":
		job["KeepAlive"] = map[string]any{"Crashed": true}
	}
	if _, kept := s.LaunchdKeys["RunAtLoad"]; defaults && !kept {
		job["RunAtLoad"] = true
	}
	if s.Product != "" {
		job[plistProductKey] = s.Product
	}
	if s.Name != DefaultName(s.Unit, declaration.OSDarwin) {
		job[plistNameKey] = s.Name
	}
	stdout, stderr := s.StdoutPath, s.StderrPath
	if defaults && stdout == "" && stderr == "" {
		stdout = LaunchdLogPath(home, s.Unit)
		stderr = stdout
	}
	if stdout != "" {
		job["StandardOutPath"] = stdout
	}
	if stderr != "" {
		job["StandardErrorPath"] = stderr
	}
	if s.RestartSec != "" {
		us, _ := declaration.ParseTimeSpan(s.RestartSec)
		job["ThrottleInterval"] = int(us / 1_000_000)
	} else if defaults {
		job["ThrottleInterval"] = RestartDelaySeconds
	}
	if s.TimeoutStopSec != "" {
		us, _ := declaration.ParseTimeSpan(s.TimeoutStopSec)
		job["ExitTimeOut"] = int(us / 1_000_000)
	}
	if s.WorkingDirectory != "" {
		job["WorkingDirectory"] = s.WorkingDirectory
	}
	if s.User != "" {
		job["UserName"] = s.User
	}
	if s.Group != "" {
		job["GroupName"] = s.Group
	}
	if s.UMask != "" {
		n, _ := strconv.ParseInt(s.UMask, 8, 32)
		job["Umask"] = int(n)
	}
	if s.Nice != nil {
		job["Nice"] = *s.Nice
	}
	if s.ProcessType != "" {
		job["ProcessType"] = s.ProcessType
	}
	if s.IOSchedulingClass == "idle" {
		job["LowPriorityIO"] = true
	}
	if s.AbandonProcessGroup {
		job["AbandonProcessGroup"] = true
	}
	soft, hard := map[string]any{}, map[string]any{}
	for name, l := range s.Limits {
		key := declaration.LimitNames[name][1]
		if n, ok := declaration.ParseLimitValue(l.Soft); ok && l.Soft != "" {
			soft[key] = n
		}
		if n, ok := declaration.ParseLimitValue(l.Hard); ok && l.Hard != "" {
			hard[key] = n
		}
	}
	if len(soft) > 0 {
		job["SoftResourceLimits"] = soft
	}
	if len(hard) > 0 {
		job["HardResourceLimits"] = hard
	}
	var buf bytes.Buffer
	enc := plist.NewEncoderForFormat(&buf, plist.XMLFormat)
	enc.Indent("\t")
	if err := enc.Encode(job); err != nil {
		return nil, fmt.Errorf("encode property list: %w", err)
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// quoteExecArgExpanding writes an argument whose '$' the init system is to
// expand: like QuoteExecArg, but '$' stays as written.
func quoteExecArgExpanding(a string) string {
	a = EscapeSpecifiers(a)
	if a != "" && !strings.ContainsFunc(a, needsQuoting) {
		return a
	}
	return `"` + cEscape(a) + `"`
}
