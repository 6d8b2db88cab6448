package units

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/wisent/stado/registry"
)

// entry is one assignment of a unit file, where it was written.
type entry struct {
	section, key, value string
	file                string
	line                int
}

// lexUnit reads a unit file into its assignments, joining continuation
// lines (a line ending in an unescaped backslash) and skipping comments
// ('#' or ';' first) and blank lines.
func lexUnit(data []byte, file string) ([]entry, error) {
	if !utf8.Valid(data) {
		return nil, &SyntaxError{File: file, Reason: "is not valid UTF-8"}
	}
	var out []entry
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	lineNo := 0
	var cont strings.Builder
	contStart := 0
	for sc.Scan() {
		lineNo++
		raw := strings.TrimRight(sc.Text(), "\r")
		line := strings.TrimSpace(raw)
		if cont.Len() > 0 {
			// Comment lines inside a continuation are ignored, as systemd does.
			if strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
				continue
			}
		} else {
			if line == "" || line[0] == '#' || line[0] == ';' {
				continue
			}
			contStart = lineNo
		}
		if endsInEscape(line) {
			cont.WriteString(line[:len(line)-1])
			cont.WriteByte(' ')
			continue
		}
		cont.WriteString(line)
		full := cont.String()
		cont.Reset()
		if strings.HasPrefix(full, "[") {
			if !strings.HasSuffix(full, "]") {
				return nil, &SyntaxError{File: file, Line: contStart, Reason: fmt.Sprintf("section header %q has no closing ']'", full)}
			}
			section = full[1 : len(full)-1]
			continue
		}
		k, v, ok := strings.Cut(full, "=")
		if !ok {
			return nil, &SyntaxError{File: file, Line: contStart, Reason: fmt.Sprintf("%q is neither a section, a comment nor KEY=VALUE", full)}
		}
		if section == "" {
			return nil, &SyntaxError{File: file, Line: contStart, Reason: fmt.Sprintf("assignment %q comes before any section", strings.TrimSpace(k))}
		}
		out = append(out, entry{section: section, key: strings.TrimSpace(k), value: strings.TrimSpace(v), file: file, line: contStart})
	}
	if err := sc.Err(); err != nil {
		return nil, &SyntaxError{File: file, Line: lineNo, Reason: err.Error()}
	}
	if cont.Len() > 0 {
		full := strings.TrimSpace(cont.String())
		if k, v, ok := strings.Cut(full, "="); ok && section != "" {
			out = append(out, entry{section: section, key: strings.TrimSpace(k), value: strings.TrimSpace(v), file: file, line: contStart})
		}
	}
	return out, nil
}

// endsInEscape reports whether line ends in a backslash that is not itself
// escaped.
func endsInEscape(line string) bool {
	n := 0
	for i := len(line) - 1; i >= 0 && line[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// tolerated lists assignments a declaration does not carry but whose loss
// does not change what runs: documentation, ordering, and the restart timing
// and start limit stado sets itself.
var tolerated = map[string]map[string]bool{
	"Unit": {
		"Description": true, "Documentation": true, "After": true, "Before": true, "Wants": true,
		"StartLimitIntervalSec": true, "StartLimitInterval": true, "StartLimitBurst": true,
	},
	"Service": {
		"RestartSec": true, "StartLimitInterval": true, "StartLimitBurst": true,
	},
	"Install": {"WantedBy": true},
}

// ParseSystemd reads a systemd unit file named name (its base name, e.g.
// "brama.service") with its drop-ins applied in order, into a declaration.
// The result is complete only when stado's rendering of it would run the
// same thing; otherwise Reason names the first assignment that a declaration
// cannot represent, with its file and line. The error is a *SyntaxError
// when a file cannot be read as a unit at all.
func ParseSystemd(data []byte, name string, dropins [][]byte) (Parsed, error) {
	entries, err := lexUnit(data, name)
	if err != nil {
		return Parsed{}, err
	}
	for i, d := range dropins {
		de, err := lexUnit(d, fmt.Sprintf("%s.d/drop-in #%d", name, i+1))
		if err != nil {
			return Parsed{}, err
		}
		entries = append(entries, de...)
	}

	p := Parsed{Complete: true, Service: registry.Service{
		Name:  DefaultName(name, registry.OSLinux),
		Unit:  name,
		Scope: registry.ScopeSystem,
	}}
	var (
		execStart []entry
		env       = map[string]string{}
		restart   *entry
		typ       *entry
		problem   string
	)
	for i := range entries {
		e := &entries[i]
		switch {
		case e.section == "Unit" && e.key == systemdNameKey:
			p.Service.Name = e.value
		case e.section == "Unit" && e.key == systemdProductKey:
			p.Service.Product = e.value
		case e.section == "Install" && e.key == "WantedBy":
			for _, w := range strings.Fields(e.value) {
				if w == "default.target" {
					p.Service.Scope = registry.ScopeUser
				}
			}
		case e.section == "Service" && e.key == "ExecStart":
			if e.value == "" {
				execStart = nil
			} else {
				execStart = append(execStart, *e)
			}
		case e.section == "Service" && e.key == "Environment":
			if e.value == "" {
				env = map[string]string{}
				continue
			}
			if problem != "" {
				continue
			}
			words, err := splitWords(e.value, false)
			if err != nil {
				problem = fmt.Sprintf("Environment= at %s:%d cannot be read: %v", e.file, e.line, err)
				continue
			}
			for _, w := range words {
				k, v, ok := strings.Cut(w.text, "=")
				switch {
				case !ok || registry.CheckEnvName(k) != nil:
					problem = fmt.Sprintf("Environment= at %s:%d holds %q, which is not an assignment", e.file, e.line, w.text)
				case len(w.specifiers) > 0:
					problem = fmt.Sprintf("Environment= at %s:%d uses specifier %s in %q, which a declaration cannot carry", e.file, e.line, w.specifiers[0], w.raw)
				default:
					env[k] = v
				}
			}
		case e.section == "Service" && e.key == "Restart":
			restart = e
		case e.section == "Service" && e.key == "Type":
			typ = e
		case strings.HasPrefix(e.key, "X-"):
		case tolerated[e.section][e.key]:
		default:
			if problem == "" {
				problem = describeUnsupported(e)
			}
		}
	}

	// The kind of unit decides first: nothing but a plain service can be
	// rendered from a program.
	switch {
	case strings.HasSuffix(name, ".socket"):
		p.incomplete("%s is a socket unit: its service is started by socket activation, which a declaration cannot express", name)
		return p, nil
	case !strings.HasSuffix(name, ".service"):
		p.incomplete("%s is not a service unit", name)
		return p, nil
	case strings.Contains(name, "@"):
		p.incomplete("%s is a template unit: its command depends on the instance name", name)
		return p, nil
	}
	if problem != "" {
		p.incomplete("%s", problem)
		return p, nil
	}
	if typ != nil && typ.value != "simple" {
		p.incomplete("Type=%s at %s:%d: stado renders simple services only", typ.value, typ.file, typ.line)
		return p, nil
	}
	switch {
	case restart == nil || restart.value == "no":
		f := false
		p.Service.KeepAlive = &f
	case restart.value == "always":
	default:
		p.incomplete("Restart=%s at %s:%d: a declaration restarts always or never", restart.value, restart.file, restart.line)
		return p, nil
	}
	switch len(execStart) {
	case 0:
		p.incomplete("%s has no ExecStart=, so it names no program", name)
		return p, nil
	case 1:
	default:
		p.incomplete("%s has %d ExecStart= lines (at %s:%d and %s:%d); a declaration runs one program", name,
			len(execStart), execStart[0].file, execStart[0].line, execStart[1].file, execStart[1].line)
		return p, nil
	}
	argv, why := parseExecStart(execStart[0])
	if why != "" {
		p.incomplete("%s", why)
		return p, nil
	}
	p.Service.Program = argv[0]
	if len(argv) > 1 {
		p.Service.Args = argv[1:]
	}
	if env["PATH"] == PathLinux {
		delete(env, "PATH")
	}
	if len(env) > 0 {
		p.Service.Env = env
	}
	return p, nil
}

// describeUnsupported names an assignment a declaration cannot carry.
func describeUnsupported(e *entry) string {
	switch e.section {
	case "Unit", "Service", "Install":
		if e.section == "Service" && (e.key == "Sockets" || strings.HasPrefix(e.key, "Listen")) {
			return fmt.Sprintf("%s= at %s:%d: the service is socket-activated, which a declaration cannot express", e.key, e.file, e.line)
		}
		return fmt.Sprintf("%s= in [%s] at %s:%d has no equivalent in a declaration", e.key, e.section, e.file, e.line)
	case "Socket":
		return fmt.Sprintf("[Socket] section at %s:%d: socket activation cannot be expressed by a declaration", e.file, e.line)
	default:
		return fmt.Sprintf("[%s] section at %s:%d has no equivalent in a declaration", e.section, e.file, e.line)
	}
}

// parseExecStart reads one ExecStart= command into its argv, or says why it
// cannot be a declaration's program and arguments. Prefixes '+', '!' and
// '!!' only change privileges granted by directives a complete declaration
// cannot have, so they are accepted; ':' turns off variable expansion; '-'
// (failure ignored) and '@' (a different argv[0]) change what the supervisor
// sees and make the unit incomplete.
func parseExecStart(e entry) ([]string, string) {
	v := e.value
	noVars := false
	for len(v) > 0 && strings.ContainsRune("-@+!:|", rune(v[0])) {
		switch v[0] {
		case '-':
			return nil, fmt.Sprintf("ExecStart= at %s:%d uses prefix '-': a failing exit would not count as a failure", e.file, e.line)
		case '@':
			return nil, fmt.Sprintf("ExecStart= at %s:%d uses prefix '@': the program runs under another argv[0]", e.file, e.line)
		case '|':
			return nil, fmt.Sprintf("ExecStart= at %s:%d uses prefix '|': the command runs through a shell", e.file, e.line)
		case ':':
			noVars = true
		}
		v = v[1:]
	}
	words, err := splitWords(v, !noVars)
	if err != nil {
		return nil, fmt.Sprintf("ExecStart= at %s:%d cannot be read: %v", e.file, e.line, err)
	}
	if len(words) == 0 {
		return nil, fmt.Sprintf("ExecStart= at %s:%d names no program", e.file, e.line)
	}
	argv := make([]string, len(words))
	for i, w := range words {
		switch {
		case w.raw == ";":
			return nil, fmt.Sprintf("ExecStart= at %s:%d holds several commands separated by ';'", e.file, e.line)
		case len(w.specifiers) > 0:
			return nil, fmt.Sprintf("ExecStart= at %s:%d uses specifier %s in %q; stado renders '%%' literally, so it would not reproduce it", e.file, e.line, w.specifiers[0], w.raw)
		case w.variables:
			return nil, fmt.Sprintf("ExecStart= at %s:%d expands a variable in %q; stado renders '$' literally, so it would not reproduce it", e.file, e.line, w.raw)
		}
		if err := checkValue("argument", w.text); err != nil {
			return nil, fmt.Sprintf("ExecStart= at %s:%d: argument %d %s", e.file, e.line, i, err.(*FieldError).Reason)
		}
		argv[i] = w.text
	}
	if !strings.HasPrefix(argv[0], "/") {
		return nil, fmt.Sprintf("ExecStart= at %s:%d runs %q, which is not an absolute path", e.file, e.line, argv[0])
	}
	return argv, ""
}
