package units

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/coreos/go-systemd/v22/unit"
	"howett.net/plist"

	"github.com/wisent/stado/registry"
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
	if goos == registry.OSDarwin {
		return PathDarwin
	}
	return PathLinux
}

// Render renders s for goos ("linux" or "darwin"); home is the home
// directory of the account the unit belongs to (it places launchd log files).
// Errors are *IncompleteError, *FieldError, or an unknown-OS error.
func Render(s registry.Service, goos, home string) ([]byte, error) {
	switch goos {
	case registry.OSLinux:
		return RenderSystemd(s)
	case registry.OSDarwin:
		return RenderLaunchd(s, home)
	default:
		return nil, &FieldError{Field: "os", Reason: fmt.Sprintf("%q is neither linux nor darwin", goos)}
	}
}

// UnitPath returns where s's unit file lives on goos: the declared
// UnitPath, or registry.DefaultUnitPath for its scope and home. Any goos
// other than darwin is taken as linux.
func UnitPath(s registry.Service, goos, home string) string {
	if s.UnitPath != "" {
		return s.UnitPath
	}
	if goos != registry.OSDarwin {
		goos = registry.OSLinux
	}
	return registry.DefaultUnitPath(goos, s.EffectiveScope(), home, s.Unit)
}

// LaunchdLogPath is where a rendered launchd job writes its standard output
// and error: <home>/.stado/logs/<label>.log.
func LaunchdLogPath(home, label string) string {
	return filepath.Join(home, ".stado", "logs", label+".log")
}

// DefaultName is the name a parsed unit gets when it carries none of its
// own: the systemd unit without ".service", or the last dot-separated part
// of a launchd label.
func DefaultName(unitID, goos string) string {
	if goos == registry.OSDarwin {
		if i := strings.LastIndexByte(unitID, '.'); i >= 0 && i < len(unitID)-1 {
			return unitID[i+1:]
		}
		return unitID
	}
	return strings.TrimSuffix(unitID, ".service")
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

// validate checks a declaration before anything is serialised.
func validate(s registry.Service, goos string) error {
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
	if goos != registry.OSDarwin {
		goos = registry.OSLinux
	}
	if err := registry.CheckServiceUnit(goos, s.Unit); err != nil {
		return &FieldError{Field: "unit", Reason: err.Error()}
	}
	if err := checkValue("program", s.Program); err != nil {
		return err
	}
	if !strings.HasPrefix(s.Program, "/") {
		return &FieldError{Field: "program", Reason: fmt.Sprintf("%q is not an absolute path", s.Program)}
	}
	for i, a := range s.Args {
		if err := checkValue(fmt.Sprintf("args[%d]", i), a); err != nil {
			return err
		}
	}
	for _, k := range sortedKeys(s.Env) {
		if err := registry.CheckEnvName(k); err != nil {
			return &FieldError{Field: "env." + k, Reason: err.Error()}
		}
		if err := checkValue("env."+k, s.Env[k]); err != nil {
			return err
		}
	}
	switch s.Scope {
	case "", registry.ScopeSystem, registry.ScopeUser:
	default:
		return &FieldError{Field: "scope", Reason: fmt.Sprintf("%q is neither system nor user", s.Scope)}
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

// mergedEnv is the fixed PATH with the declared environment over it.
func mergedEnv(s registry.Service, goos string) map[string]string {
	env := map[string]string{"PATH": FixedPath(goos)}
	for k, v := range s.Env {
		env[k] = v
	}
	return env
}

// RenderSystemd renders s as a systemd service unit. The unit restarts the
// program whenever it exits (Restart=no when keep_alive is false), disables
// the start limit so no number of restarts leaves it dead for good, and is
// wanted by multi-user.target (system scope) or default.target (user scope).
// Errors are *IncompleteError or *FieldError; nothing is rendered then.
func RenderSystemd(s registry.Service) ([]byte, error) {
	if err := validate(s, registry.OSLinux); err != nil {
		return nil, err
	}
	argv := append([]string{s.Program}, s.Args...)
	words := make([]string, len(argv))
	for i, a := range argv {
		words[i] = QuoteExecArg(a)
	}
	opts := []*unit.UnitOption{
		unit.NewUnitOption("Unit", "Description", "stado service "+EscapeSpecifiers(s.Name)),
	}
	if s.Name != DefaultName(s.Unit, registry.OSLinux) {
		opts = append(opts, unit.NewUnitOption("Unit", systemdNameKey, s.Name))
	}
	if s.Product != "" {
		opts = append(opts, unit.NewUnitOption("Unit", systemdProductKey, s.Product))
	}
	opts = append(opts,
		unit.NewUnitOption("Unit", "StartLimitIntervalSec", "0"),
		unit.NewUnitOption("Service", "ExecStart", strings.Join(words, " ")),
	)
	env := mergedEnv(s, registry.OSLinux)
	for _, k := range sortedKeys(env) {
		opts = append(opts, unit.NewUnitOption("Service", "Environment", QuoteEnvAssignment(k, env[k])))
	}
	restart := "always"
	if !s.KeepsAlive() {
		restart = "no"
	}
	opts = append(opts,
		unit.NewUnitOption("Service", "Restart", restart),
		unit.NewUnitOption("Service", "RestartSec", strconv.Itoa(RestartDelaySeconds)),
	)
	wanted := "multi-user.target"
	if s.EffectiveScope() == registry.ScopeUser {
		wanted = "default.target"
	}
	opts = append(opts, unit.NewUnitOption("Install", "WantedBy", wanted))
	return io.ReadAll(unit.Serialize(opts))
}

// launchdJob is the property list stado writes; the encoder sorts keys.
type launchdJob struct {
	EnvironmentVariables map[string]string `plist:"EnvironmentVariables"`
	KeepAlive            bool              `plist:"KeepAlive"`
	Label                string            `plist:"Label"`
	ProgramArguments     []string          `plist:"ProgramArguments"`
	RunAtLoad            bool              `plist:"RunAtLoad"`
	StadoProduct         string            `plist:"StadoProduct,omitempty"`
	StadoService         string            `plist:"StadoService,omitempty"`
	StandardErrorPath    string            `plist:"StandardErrorPath"`
	StandardOutPath      string            `plist:"StandardOutPath"`
	ThrottleInterval     int               `plist:"ThrottleInterval"`
}

// RenderLaunchd renders s as an XML launchd property list. Standard output
// and error go to LaunchdLogPath(home, label): a declaration has no field
// for other log files, so a rendered job always logs there. Errors are
// *IncompleteError or *FieldError; nothing is rendered then.
func RenderLaunchd(s registry.Service, home string) ([]byte, error) {
	if err := validate(s, registry.OSDarwin); err != nil {
		return nil, err
	}
	if !strings.HasPrefix(home, "/") {
		return nil, &FieldError{Field: "home", Reason: fmt.Sprintf("%q is not an absolute path", home)}
	}
	if err := checkValue("home", home); err != nil {
		return nil, err
	}
	logPath := LaunchdLogPath(home, s.Unit)
	job := launchdJob{
		EnvironmentVariables: mergedEnv(s, registry.OSDarwin),
		KeepAlive:            s.KeepsAlive(),
		Label:                s.Unit,
		ProgramArguments:     append([]string{s.Program}, s.Args...),
		RunAtLoad:            true,
		StadoProduct:         s.Product,
		StandardErrorPath:    logPath,
		StandardOutPath:      logPath,
		ThrottleInterval:     RestartDelaySeconds,
	}
	if s.Name != DefaultName(s.Unit, registry.OSDarwin) {
		job.StadoService = s.Name
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
