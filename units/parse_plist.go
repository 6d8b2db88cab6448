package units

import (
	"fmt"
	"sort"
	"strings"

	"howett.net/plist"

	"github.com/wisent/stado/registry"
)

// plistTolerated lists keys a declaration does not carry but whose loss does
// not change what runs: where output goes, the respawn throttle, the
// scheduling class, and stado's own identity keys.
var plistTolerated = map[string]bool{
	"StandardOutPath": true, "StandardErrorPath": true, "ThrottleInterval": true, "ProcessType": true,
	plistNameKey: true, plistProductKey: true,
}

// ParsePlist reads a launchd property list (XML or binary) into a
// declaration. The program is Program or the first ProgramArguments entry
// (which must then agree with Program); KeepAlive may be a boolean, while a
// dictionary of conditions makes the declaration incomplete, as does any key
// that changes what runs (UserName, WorkingDirectory, Sockets,
// StartCalendarInterval, ...). The scope is system unless ParseFile knows
// better from the path. The error is a *SyntaxError when data is not a
// property list describing a job.
func ParsePlist(data []byte) (Parsed, error) {
	var doc map[string]any
	if _, err := plist.Unmarshal(data, &doc); err != nil {
		return Parsed{}, &SyntaxError{File: "property list", Reason: fmt.Sprintf("cannot be read: %v", err)}
	}
	label, ok := doc["Label"].(string)
	if !ok || label == "" {
		return Parsed{}, &SyntaxError{File: "property list", Reason: "has no Label string, so it describes no launchd job"}
	}
	p := Parsed{Complete: true, Service: registry.Service{
		Name:  DefaultName(label, registry.OSDarwin),
		Unit:  label,
		Scope: registry.ScopeSystem,
	}}
	if n, ok := doc[plistNameKey].(string); ok && n != "" {
		p.Service.Name = n
	}
	if pr, ok := doc[plistProductKey].(string); ok {
		p.Service.Product = pr
	}

	keys := make([]string, 0, len(doc))
	for k := range doc {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch k {
		case "Label", "Program", "ProgramArguments", "EnvironmentVariables", "KeepAlive", "RunAtLoad":
		default:
			if !plistTolerated[k] {
				p.incomplete("key %s has no equivalent in a declaration", k)
				return p, nil
			}
		}
	}

	keepAlive := false
	switch v := doc["KeepAlive"].(type) {
	case nil:
	case bool:
		keepAlive = v
	case map[string]any:
		p.incomplete("KeepAlive is a dictionary of conditions; a declaration keeps a program alive always or never")
		return p, nil
	default:
		p.incomplete("KeepAlive is a %T, not a boolean", v)
		return p, nil
	}
	runAtLoad, _ := doc["RunAtLoad"].(bool)
	if _, present := doc["RunAtLoad"]; present {
		if _, isBool := doc["RunAtLoad"].(bool); !isBool {
			p.incomplete("RunAtLoad is not a boolean")
			return p, nil
		}
	}
	if !keepAlive && !runAtLoad {
		p.incomplete("the job neither runs at load nor is kept alive, so it only runs on demand")
		return p, nil
	}
	if !keepAlive {
		f := false
		p.Service.KeepAlive = &f
	}

	program, _ := doc["Program"].(string)
	if _, present := doc["Program"]; present && program == "" {
		p.incomplete("Program is not a non-empty string")
		return p, nil
	}
	var argv []string
	if raw, present := doc["ProgramArguments"]; present {
		list, ok := raw.([]any)
		if !ok {
			p.incomplete("ProgramArguments is not an array")
			return p, nil
		}
		for i, a := range list {
			s, ok := a.(string)
			if !ok {
				p.incomplete("ProgramArguments[%d] is not a string", i)
				return p, nil
			}
			argv = append(argv, s)
		}
	}
	switch {
	case program == "" && len(argv) == 0:
		p.incomplete("neither Program nor ProgramArguments names a program")
		return p, nil
	case program == "":
		program = argv[0]
	case len(argv) == 0:
		argv = []string{program}
	case argv[0] != program:
		p.incomplete("Program %q differs from ProgramArguments[0] %q: the program runs under another argv[0]", program, argv[0])
		return p, nil
	}
	if !strings.HasPrefix(program, "/") {
		p.incomplete("program %q is not an absolute path", program)
		return p, nil
	}
	for i, a := range argv {
		if err := checkValue("argument", a); err != nil {
			p.incomplete("ProgramArguments[%d] %s", i, err.(*FieldError).Reason)
			return p, nil
		}
	}

	env := map[string]string{}
	if raw, present := doc["EnvironmentVariables"]; present {
		m, ok := raw.(map[string]any)
		if !ok {
			p.incomplete("EnvironmentVariables is not a dictionary")
			return p, nil
		}
		for k, v := range m {
			s, ok := v.(string)
			if !ok {
				p.incomplete("EnvironmentVariables.%s is not a string", k)
				return p, nil
			}
			if registry.CheckEnvName(k) != nil {
				p.incomplete("EnvironmentVariables.%s is not a valid variable name", k)
				return p, nil
			}
			if err := checkValue("env", s); err != nil {
				p.incomplete("EnvironmentVariables.%s %s", k, err.(*FieldError).Reason)
				return p, nil
			}
			env[k] = s
		}
	}
	if env["PATH"] == PathDarwin {
		delete(env, "PATH")
	}
	p.Service.Program = program
	if len(argv) > 1 {
		p.Service.Args = argv[1:]
	}
	if len(env) > 0 {
		p.Service.Env = env
	}
	return p, nil
}
