package units

import (
	"bytes"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	"howett.net/plist"

	"github.com/wisent/stado/declaration"
)

// onDemandKeys start a launchd job on an event rather than keeping it
// running; a job with one of them that is neither kept alive nor run at
// load is not a service stado keeps running.
var onDemandKeys = []string{"StartInterval", "StartCalendarInterval", "WatchPaths", "QueueDirectories", "StartOnMount", "LaunchEvents", "MachServices"}

// ParsePlist reads a launchd property list (XML or binary) into a
// declaration that renders back to the same job: each key lands in a field
// of the declaration or, verbatim, in its launchd_keys. The declaration is
// incomplete only when the job cannot be reinstalled from a document
// (socket or inetd activation, a disabled or on-demand-only job, a program
// stado cannot carry); Blockers then names every key in the way. The scope
// is system unless ParseFile knows better from the path. The error is a
// *SyntaxError when data is not a property list describing a job.
func ParsePlist(data []byte) (Parsed, error) {
	return parsePlistNamed(data, "property list")
}

func parsePlistNamed(data []byte, file string) (Parsed, error) {
	var doc map[string]any
	if _, err := plist.Unmarshal(data, &doc); err != nil {
		return Parsed{}, &SyntaxError{File: file, Reason: fmt.Sprintf("cannot be read: %v", err)}
	}
	label, ok := doc["Label"].(string)
	if !ok || label == "" {
		return Parsed{}, &SyntaxError{File: file, Reason: "has no Label string, so it describes no launchd job"}
	}
	f := false
	p := Parsed{Complete: true, Env: map[string]string{}, Service: declaration.Service{
		Name:         DefaultName(label, declaration.OSDarwin),
		Unit:         label,
		Scope:        declaration.ScopeSystem,
		UnitSettings: declaration.UnitSettings{StadoDefaults: &f},
	}}
	u := &p.Service.UnitSettings
	block := func(key, reason, fix string) {
		p.Blockers = append(p.Blockers, Blocker{Key: key, File: file, Reason: reason, Fix: fix})
	}
	keep := func(k string) {
		x, err := PlistValueXML(doc[k])
		if err != nil {
			block(k, fmt.Sprintf("cannot be kept: %v", err), "remove it")
			return
		}
		if u.LaunchdKeys == nil {
			u.LaunchdKeys = map[string]string{}
		}
		u.LaunchdKeys[k] = x
	}
	str := func(k string) (string, bool) {
		s, ok := doc[k].(string)
		if !ok {
			keep(k)
		}
		return s, ok
	}
	keys := make([]string, 0, len(doc))
	for k := range doc {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var program string
	var argv []string
	for _, k := range keys {
		v := doc[k]
		switch k {
		case "Label":
		case plistNameKey:
			if n, ok := v.(string); ok && n != "" {
				p.Service.Name = n
			}
		case plistProductKey:
			if pr, ok := v.(string); ok {
				p.Service.Product = pr
			}
		case "Program":
			s, ok := v.(string)
			if !ok || s == "" {
				block(k, "is not a non-empty string", "name the program by its absolute path")
			}
			program = s
		case "ProgramArguments":
			list, ok := v.([]any)
			if !ok {
				block(k, "is not an array", "write the program and its arguments as an array of strings")
				continue
			}
			for i, a := range list {
				s, ok := a.(string)
				if !ok {
					block(k, fmt.Sprintf("element %d is not a string", i), "write every argument as a string")
					continue
				}
				argv = append(argv, s)
			}
		case "EnvironmentVariables":
			m, ok := v.(map[string]any)
			if !ok {
				block(k, "is not a dictionary", "write it as a dictionary of strings")
				continue
			}
			for name, val := range m {
				s, ok := val.(string)
				switch {
				case !ok:
					block(k, fmt.Sprintf("%s is not a string", name), "write the value as a string")
				case declaration.CheckEnvName(name) != nil:
					block(k, fmt.Sprintf("%s is not a valid variable name", name), "rename it")
				case checkPlistString("env", s) != nil:
					block(k, fmt.Sprintf("%s %s", name, checkPlistString("env", s).(*FieldError).Reason), "remove it")
				default:
					p.Env[name] = s
				}
			}
		case "KeepAlive":
			switch kv := v.(type) {
			case bool:
				if !kv {
					p.Service.KeepAlive = &f
				}
			case map[string]any:
				if r := restartOfKeepAlive(kv); r != "" {
					u.Restart = r
				} else {
					keep(k)
				}
			default:
				block(k, fmt.Sprintf("is a %T, neither a boolean nor a dictionary", v), "write true, false or a dictionary of conditions")
			}
		case "WorkingDirectory":
			if s, ok := str(k); ok {
				if !strings.HasPrefix(s, "/") || path.Clean(s) != s {
					delete(u.LaunchdKeys, k)
					keep(k)
				} else {
					u.WorkingDirectory = s
				}
			}
		case "UserName":
			if s, ok := str(k); ok {
				u.User = s
			}
		case "GroupName":
			if s, ok := str(k); ok {
				u.Group = s
			}
		case "StandardOutPath":
			if s, ok := str(k); ok {
				u.StdoutPath = s
			}
		case "StandardErrorPath":
			if s, ok := str(k); ok {
				u.StderrPath = s
			}
		case "ProcessType":
			if s, ok := str(k); ok {
				u.ProcessType = s
			}
		case "Umask":
			if n, ok := plistInt(v); ok && n >= 0 && n <= 0o777 {
				u.UMask = fmt.Sprintf("%04o", n)
			} else {
				keep(k)
			}
		case "ThrottleInterval":
			if n, ok := plistInt(v); ok && n >= 0 {
				u.RestartSec = strconv.FormatInt(n, 10)
			} else {
				keep(k)
			}
		case "ExitTimeOut":
			if n, ok := plistInt(v); ok && n >= 0 {
				u.TimeoutStopSec = strconv.FormatInt(n, 10)
			} else {
				keep(k)
			}
		case "Nice":
			if n, ok := plistInt(v); ok && n >= -20 && n <= 19 {
				i := int(n)
				u.Nice = &i
			} else {
				keep(k)
			}
		case "LowPriorityIO":
			if b, ok := v.(bool); ok && b {
				u.IOSchedulingClass = "idle"
			} else {
				keep(k)
			}
		case "AbandonProcessGroup":
			if b, ok := v.(bool); ok && b {
				u.AbandonProcessGroup = true
			} else {
				keep(k)
			}
		case "SoftResourceLimits", "HardResourceLimits":
			if !plistLimits(u, k, v) {
				block(k, "holds a limit that is not a number launchd knows", "write each limit as an integer under a known key")
			}
		case "Sockets":
			block(k, "the job is socket-activated: launchd passes it sockets it listens on, which a declaration cannot express",
				"let the program open its own listening socket and drop Sockets")
		case "inetdCompatibility":
			block(k, "the job is started per connection, inetd style", "run a long-lived program instead and drop inetdCompatibility")
		case "Disabled":
			if b, ok := v.(bool); ok && b {
				block(k, "the job is disabled, so launchd does not load it", "remove Disabled or set it false")
			} else {
				keep(k)
			}
		default:
			keep(k)
		}
	}

	// A job that is neither kept alive nor run at load only runs on demand.
	_, keptByDict := u.LaunchdKeys["KeepAlive"]
	keptAlive := p.Service.KeepsAlive() && doc["KeepAlive"] != nil || u.Restart != "" || keptByDict
	runAtLoad, _ := doc["RunAtLoad"].(bool)
	if !keptAlive && !runAtLoad {
		why := "the job neither runs at load nor is kept alive, so it only runs on demand"
		for _, k := range onDemandKeys {
			if _, ok := doc[k]; ok {
				why = fmt.Sprintf("the job runs only when %s fires: it neither runs at load nor is kept alive", k)
				break
			}
		}
		block("RunAtLoad", why, "set RunAtLoad or KeepAlive true")
	}
	if doc["KeepAlive"] == nil {
		p.Service.KeepAlive = &f
	}

	switch {
	case program == "" && len(argv) == 0:
		block("ProgramArguments", "neither Program nor ProgramArguments names a program", "add ProgramArguments")
	case program == "":
		program = argv[0]
	case len(argv) == 0:
		argv = []string{program}
	case argv[0] != program:
		block("Program", fmt.Sprintf("%q differs from ProgramArguments[0] %q: the program runs under another argv[0]", program, argv[0]),
			"make ProgramArguments[0] the program, or drop Program")
	}
	if program != "" && !strings.HasPrefix(program, "/") {
		block("ProgramArguments", fmt.Sprintf("program %q is not an absolute path", program), "name the program by its absolute path")
	}
	for i, a := range argv {
		if err := checkPlistString("argument", a); err != nil {
			block("ProgramArguments", fmt.Sprintf("element %d %s", i, err.(*FieldError).Reason), "remove it")
		}
	}
	p.Service.Program = program
	if len(argv) > 1 {
		p.Service.Args = argv[1:]
	}
	if len(p.Env) > 0 {
		p.Service.Env = map[string]string{}
		for k, v := range p.Env {
			p.Service.Env[k] = v
		}
	}
	p.checkDeclaration(declaration.OSDarwin, file, func(field string) (string, int) {
		base, _, _ := strings.Cut(field, ".")
		base, _, _ = strings.Cut(base, "[")
		for k, f := range declaration.LaunchdKeyNames {
			if f == base {
				return k, 0
			}
		}
		return base, 0
	})
	p.finish()
	return p, nil
}

// restartOfKeepAlive maps the KeepAlive dictionaries a restart word says
// exactly: {SuccessfulExit: false} on-failure, {SuccessfulExit: true}
// on-success, {Crashed: true} on-abort. Any other dictionary is kept
// verbatim ("").
func restartOfKeepAlive(m map[string]any) string {
	if len(m) != 1 {
		return ""
	}
	if b, ok := m["SuccessfulExit"].(bool); ok {
		if b {
			return "on-success"
		}
		return "on-failure"
	}
	if b, ok := m["Crashed"].(bool); ok && b {
		return "on-abort"
	}
	return ""
}

// plistInt reads a property-list integer.
func plistInt(v any) (int64, bool) {
	switch n := v.(type) {
	case uint64:
		if n > 1<<62 {
			return 0, false
		}
		return int64(n), true
	case int64:
		return n, true
	case int:
		return int64(n), true
	}
	return 0, false
}

// plistLimits reads SoftResourceLimits or HardResourceLimits into u.Limits.
func plistLimits(u *declaration.UnitSettings, key string, v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for lk, lv := range m {
		n, ok := plistInt(lv)
		name := ""
		for dn, ks := range declaration.LimitNames {
			if ks[1] == lk {
				name = dn
			}
		}
		if !ok || n < 0 || name == "" {
			return false
		}
		if u.Limits == nil {
			u.Limits = map[string]declaration.Limit{}
		}
		l := u.Limits[name]
		if key == "SoftResourceLimits" {
			l.Soft = strconv.FormatInt(n, 10)
		} else {
			l.Hard = strconv.FormatInt(n, 10)
		}
		u.Limits[name] = l
	}
	return true
}

const (
	plistHead = `<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">` + "\n"
	plistOpen = `<plist version="1.0">`
)

// PlistValueXML writes one property-list value as compact XML, the form
// launchd_keys holds ("<true/>", "<dict><key>A</key><integer>1</integer></dict>").
func PlistValueXML(v any) (string, error) {
	b, err := plist.Marshal(v, plist.XMLFormat)
	if err != nil {
		return "", err
	}
	i := bytes.Index(b, []byte(plistOpen))
	j := bytes.LastIndex(b, []byte("</plist>"))
	if i < 0 || j < i {
		return "", fmt.Errorf("unexpected encoding %q", b)
	}
	return string(b[i+len(plistOpen) : j]), nil
}

// ParsePlistValueXML reads one value written by PlistValueXML (or by hand).
func ParsePlistValueXML(x string) (any, error) {
	var v any
	if _, err := plist.Unmarshal([]byte(plistHead+plistOpen+x+"</plist>"), &v); err != nil {
		return nil, fmt.Errorf("not a property-list value: %v", err)
	}
	return v, nil
}
