package units

import (
	"bufio"
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/wisent/stado/declaration"
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
		// As systemd does: a continued line keeps its text as written (the
		// spaces before the backslash, the next line's leading spaces), the
		// backslash becomes a space, and the joined line is trimmed.
		if endsInEscape(raw) {
			cont.WriteString(raw[:len(raw)-1])
			cont.WriteByte(' ')
			continue
		}
		cont.WriteString(raw)
		full := strings.TrimSpace(cont.String())
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

// listKeys are the systemd directives whose assignments accumulate and
// whose empty assignment resets the list.
var listKeys = map[string]bool{
	"After": true, "Before": true, "Wants": true, "Requires": true, "WantedBy": true, "RequiredBy": true,
	"ExecStartPre": true, "ExecStartPost": true, "ExecReload": true, "ExecStop": true, "ExecStopPost": true,
	"EnvironmentFile": true,
}

// ParseSystemd reads a systemd unit file named name (its base name, e.g.
// "brama.service") with its drop-ins applied in order, into a declaration.
// Drop-ins are named "drop-in #N" in blockers; ParseSystemdFiles names them
// by file. The error is a *SyntaxError when a file cannot be read as a unit.
func ParseSystemd(data []byte, name string, dropins [][]byte) (Parsed, error) {
	named := make([]DropIn, len(dropins))
	for i, d := range dropins {
		named[i] = DropIn{Path: fmt.Sprintf("%s.d/drop-in #%d", name, i+1), Content: string(d)}
	}
	return ParseSystemdFiles(data, name, named)
}

// ParseSystemdFiles reads a systemd unit file named name with its drop-ins
// (each named by its path) into a declaration that renders back to the same
// unit: every assignment lands in a field of the declaration or, verbatim,
// in its systemd_keys. The declaration is incomplete only when the unit
// cannot be reinstalled from a document (not a service, a template, socket
// activation, a command stado cannot carry); then Blockers names every
// assignment in the way, each with its file, line and what would make the
// unit adoptable. The error is a *SyntaxError when a file cannot be read as
// a unit at all.
func ParseSystemdFiles(data []byte, name string, dropins []DropIn) (Parsed, error) {
	return parseSystemd(data, name, name, "", "", dropins)
}

// ParseSystemdInstance reads the template file named template
// ("foo@.service") with its drop-ins as the template's instance unit
// ("foo@bar.service"): the specifiers that depend on the unit's name are
// written out for that instance (see specifiers.go), so the declaration
// renders into a plain unit file of the instance's name that systemd reads
// as it reads the instance. A unit that is not an instance of template is
// refused with a *SyntaxError.
func ParseSystemdInstance(data []byte, template, unit string, dropins []DropIn) (Parsed, error) {
	if !InstanceOf(unit, template) {
		return Parsed{}, &SyntaxError{File: template, Reason: fmt.Sprintf("%s is not an instance of the template %s", unit, template)}
	}
	return parseSystemd(data, template, unit, "", "", dropins)
}

// parseSystemd reads the file named file (its path when known, for %y) as
// the unit named unit: the file's own name, or an instance of the template
// file.
func parseSystemd(data []byte, file, unit, path, hostname string, dropins []DropIn) (Parsed, error) {
	name := unit
	entries, err := lexUnit(data, file)
	if err != nil {
		return Parsed{}, err
	}
	for _, d := range dropins {
		de, err := lexUnit([]byte(d.Content), dropInLabel(d.Path))
		if err != nil {
			return Parsed{}, err
		}
		entries = append(entries, de...)
	}
	f := false
	p := Parsed{Complete: true, Env: map[string]string{}, hostname: hostname, Service: declaration.Service{
		Name:         DefaultName(name, declaration.OSLinux),
		Unit:         name,
		Scope:        declaration.ScopeSystem,
		UnitSettings: declaration.UnitSettings{StadoDefaults: &f},
	}}
	// Specifiers that depend on the unit's name are written out for it
	// (a template without an instance has nothing to write them out with).
	skip := map[int]bool{}
	if !IsTemplate(name) {
		vals := nameSpecifierValues(name, path)
		for i := range entries {
			e := &entries[i]
			v, bad := expandNameSpecifiers(e.value, vals)
			if len(bad) > 0 {
				p.block(e, e.key, strings.Join(bad, "; "),
					"adopt an instance whose name needs no quoting, or write the value out")
				skip[i] = true
				continue
			}
			e.value = v
		}
	}
	u := &p.Service.UnitSettings
	var (
		execStart []entry
		scalars   = map[string]*entry{}
		lists     = map[string][]*entry{}
		src       = map[string]*entry{}
		env       = map[string]string{}
	)
	for i := range entries {
		if skip[i] {
			continue
		}
		e := &entries[i]
		key := e.key
		src[key] = e
		switch {
		case e.section == "Unit" && key == systemdNameKey:
			p.Service.Name = e.value
		case e.section == "Unit" && key == systemdProductKey:
			p.Service.Product = e.value
		case strings.HasPrefix(e.section, "X-"):
			// systemd ignores an X- section; it is kept for the applications
			// that read it.
			u.SystemdKeys = append(u.SystemdKeys, declaration.UnitKey{Section: e.section, Key: key, Value: e.value})
		case e.section != "Unit" && e.section != "Service" && e.section != "Install":
			p.block(e, "["+e.section+"]", fmt.Sprintf("a [%s] section belongs to another kind of unit", e.section),
				"adopt the .service unit this one starts")
		case e.section == "Service" && key == "ExecStart":
			if e.value == "" {
				execStart = nil
			} else {
				execStart = append(execStart, *e)
			}
		case e.section == "Service" && key == "Environment":
			if e.value == "" {
				// A reset drops what came before, verbatim lines included.
				p.Env, env = map[string]string{}, map[string]string{}
				kept := u.SystemdKeys[:0]
				for _, k := range u.SystemdKeys {
					if !(k.Section == "Service" && k.Key == "Environment") {
						kept = append(kept, k)
					}
				}
				u.SystemdKeys = kept
				continue
			}
			p.environment(e, env)
		case (e.section == "Service" && key == "Sockets") || (e.section == "Service" && key == "StandardInput" && (e.value == "socket" || strings.HasPrefix(e.value, "fd"))):
			p.block(e, key, "the service is socket-activated: its socket unit, which a declaration does not carry, passes it the listening socket",
				"run the program with its own listening socket and drop "+key+"=")
		case isTyped(e):
			if listKeys[key] {
				if e.value == "" {
					lists[key] = nil
				} else {
					lists[key] = append(lists[key], e)
				}
			} else {
				scalars[key] = e
			}
		default:
			u.SystemdKeys = append(u.SystemdKeys, declaration.UnitKey{Section: e.section, Key: key, Value: e.value})
		}
	}

	// The kind of unit decides first: only a plain service can be
	// rendered from a program.
	switch {
	case !strings.HasSuffix(name, ".service"):
		// Nothing else of a unit of another kind matters.
		p.Blockers = nil
		kind := name[strings.LastIndexByte(name, '.')+1:]
		if strings.HasSuffix(name, ".conf") {
			p.blockUnit(name, "unit", fmt.Sprintf("%s is a drop-in, not a unit", name),
				"parse the unit it belongs to with --dropins naming its directory")
		} else {
			p.blockUnit(name, "unit", fmt.Sprintf("%s is a %s unit, not a service", name, kind),
				"adopt the .service unit it starts")
		}
		p.finish()
		return p, nil
	case IsTemplate(name):
		inst := InstanceName(name, "NAME")
		p.blockUnit(file, "unit", fmt.Sprintf("%s is a template: its command and settings depend on the instance name", name),
			fmt.Sprintf("adopt an instance (stado service adopt %s, or stado host unit parse FILE --instance NAME)", inst))
	}
	execBlocked := false
	for i := range skip {
		if entries[i].section == "Service" && entries[i].key == "ExecStart" {
			execBlocked = true // named already; not "no ExecStart="
		}
	}
	if len(execStart) > 0 || !execBlocked {
		p.execStart(file, execStart)
	}
	for key, e := range scalars {
		p.scalar(key, e)
	}
	for key, es := range lists {
		p.list(key, es)
	}
	if len(env) > 0 {
		p.Service.Env = env
	}
	if u.Restart == "" {
		p.Service.KeepAlive = &f // no Restart= is systemd's no
	}
	for _, w := range u.WantedBy {
		if w == "default.target" {
			p.Service.Scope = declaration.ScopeUser
		}
	}
	p.checkDeclaration(declaration.OSLinux, file, func(field string) (string, int) {
		base, sub, _ := strings.Cut(field, ".")
		base, _, _ = strings.Cut(base, "[")
		key := base
		switch base {
		case "program", "args":
			key = "ExecStart"
		case "env":
			key = "Environment"
		case "limits":
			key = declaration.LimitNames[sub][0]
		default:
			for k, f := range declaration.SystemdKeyNames {
				if f == base {
					key = k
				}
			}
		}
		if e := src[key]; e != nil {
			return key, e.line
		}
		return key, 0
	})
	p.finish()
	return p, nil
}

// dropInLabel names a drop-in in blockers by its directory and file name:
// "ssh.service.d/override.conf".
func dropInLabel(path string) string {
	dir, file := filepath.Split(path)
	if dir == "" {
		return file
	}
	return filepath.Join(filepath.Base(filepath.Clean(dir)), file)
}

// typedKeys are the directives parsed into typed fields; the rest are kept
// verbatim.
func isTyped(e *entry) bool {
	switch e.section {
	case "Unit":
		switch e.key {
		case "Description", "After", "Before", "Wants", "Requires", "StartLimitIntervalSec", "StartLimitBurst":
			return true
		}
	case "Service":
		switch e.key {
		case "WorkingDirectory", "User", "Group", "UMask", "Restart", "RestartSec", "Type", "PIDFile",
			"ExecStartPre", "ExecStartPost", "ExecReload", "ExecStop", "ExecStopPost", "EnvironmentFile",
			"Nice", "IOSchedulingClass", "IOSchedulingPriority", "KillMode", "Delegate", "TimeoutStopSec", "WatchdogSec":
			return true
		case "StandardOutput", "StandardError":
			return strings.HasPrefix(e.value, "append:")
		}
		if _, ok := limitName(e.key); ok {
			return true
		}
	case "Install":
		return e.key == "WantedBy" || e.key == "RequiredBy"
	}
	return false
}

func limitName(directive string) (string, bool) {
	for n, ks := range declaration.LimitNames {
		if ks[0] == directive {
			return n, true
		}
	}
	return "", false
}

// environment reads one Environment= line into p.Env and the
// declaration's env. A word with a specifier (NAME=%H) is kept verbatim,
// alone on an Environment= line of its own, so the other words of its line
// stay typed. Every variable lives in one place only: a later assignment
// drops the earlier one wherever it was (typed or kept), so the rendering,
// which writes typed lines before kept ones, gives each variable the value
// systemd computes from the last assignment.
func (p *Parsed) environment(e *entry, env map[string]string) {
	words, err := splitWords(e.value, false)
	if err != nil {
		p.block(e, "Environment", fmt.Sprintf("cannot be read: %v", err), "fix its quoting")
		return
	}
	for _, w := range words {
		k, v, ok := strings.Cut(w.text, "=")
		if !ok || declaration.CheckEnvName(k) != nil {
			p.block(e, "Environment", fmt.Sprintf("holds %q, which is not an assignment", w.text), "write NAME=VALUE")
			continue
		}
		p.Env[k] = v
		p.dropKeptEnv(k)
		delete(env, k)
		if len(w.specifiers) > 0 {
			p.Service.SystemdKeys = append(p.Service.SystemdKeys, declaration.UnitKey{Section: e.section, Key: e.key, Value: w.raw})
		} else {
			env[k] = v
		}
	}
}

// keptEnvName is the variable a kept Environment= line assigns; "" when
// it is not one word NAME=VALUE.
func keptEnvName(k declaration.UnitKey) string {
	if k.Section != "Service" || k.Key != "Environment" {
		return ""
	}
	words, err := splitWords(k.Value, false)
	if err != nil || len(words) != 1 {
		return ""
	}
	name, _, _ := strings.Cut(words[0].text, "=")
	return name
}

// dropKeptEnv removes the kept Environment= line that assigns name.
func (p *Parsed) dropKeptEnv(name string) {
	keys := p.Service.SystemdKeys
	kept := keys[:0]
	for _, k := range keys {
		if keptEnvName(k) != name {
			kept = append(kept, k)
		}
	}
	p.Service.SystemdKeys = kept
}

// execStart reads the one ExecStart= command into program and args. When
// there are several, each beyond the first is a blocker, and so is every
// problem of each command, so the whole list comes at once.
func (p *Parsed) execStart(name string, es []entry) {
	switch len(es) {
	case 0:
		p.blockUnit(name, "ExecStart", name+" has no ExecStart=, so it names no program", "add the ExecStart= of the program it runs")
		return
	case 1:
	default:
		for i := range es {
			e := es[i]
			if i > 0 {
				p.block(&e, "ExecStart", fmt.Sprintf("is one of %d ExecStart= lines; a declaration runs one program", len(es)),
					"move the other commands to ExecStartPre= or ExecStartPost=")
			}
			_, _, _, probs := parseExecStart(e, p.hostname)
			for _, pr := range probs {
				p.block(&e, "ExecStart", pr.why, pr.fix)
			}
		}
		return
	}
	e := es[0]
	argv, prefix, expand, probs := parseExecStart(e, p.hostname)
	if len(probs) > 0 {
		for _, pr := range probs {
			p.block(&e, "ExecStart", pr.why, pr.fix)
		}
		return
	}
	p.Service.ExecStartPrefix = prefix
	p.Service.Program = argv[0]
	if len(argv) > 1 {
		p.Service.Args = argv[1:]
	}
	p.Service.ExpandEnv = expand
}

// execProblem is one reason an ExecStart= command cannot be a
// declaration's program and arguments, and what would fix it.
type execProblem struct{ why, fix string }

// parseExecStart reads one ExecStart= command into its argv, or returns
// every reason it cannot be a declaration's program and arguments.
// ':' turns off variable expansion; the other prefixes change how the
// supervisor runs or judges the command, which a declaration does not carry.
// A '$' expansion makes expand true: the args keep their '$' words as
// written and the rendering leaves them for systemd to expand. %H is
// written out as hostname, the name of the host the unit is read on (as
// systemd would expand it there); "" leaves it a blocker. Every other
// specifier is a blocker.
func parseExecStart(e entry, hostname string) (argv []string, prefix string, expand bool, probs []execProblem) {
	v := e.value
	noVars := false
	bad := func(why, fix string) { probs = append(probs, execProblem{why, fix}) }
	for len(v) > 0 && strings.ContainsRune("-@+!:|", rune(v[0])) {
		switch v[0] {
		case '@':
			bad("uses prefix '@': the program runs under another argv[0], which a declaration does not carry", "drop the prefix")
		case '|':
			bad("uses prefix '|': the command runs through a shell, which a declaration does not carry", "run the program directly")
		case ':':
			noVars = true
		default:
			prefix += v[:1]
		}
		v = v[1:]
	}
	if strings.Contains(prefix, "-") {
		prefix = "-" + strings.ReplaceAll(prefix, "-", "")
	}
	if p := strings.TrimPrefix(prefix, "-"); p != "" && p != "+" && p != "!" && p != "!!" {
		bad(fmt.Sprintf("combines prefixes %q, which a declaration does not carry", prefix), "keep '-' and one of '+', '!', '!!'")
	}
	if hostname != "" {
		// The host's name reads back as itself unquoted (safeExpansion), so
		// it is written into the command as systemd would expand it.
		v, _ = expandNameSpecifiers(v, map[byte]specifierValue{'H': {value: hostname}})
	}
	words, err := splitWords(v, !noVars)
	if err != nil {
		bad(fmt.Sprintf("cannot be read: %v", err), "fix its quoting")
		return nil, "", false, probs
	}
	if len(words) == 0 {
		bad("names no program", "name the program")
		return nil, "", false, probs
	}
	for _, w := range words {
		if w.variables {
			expand = true
		}
	}
	if expand {
		// Read again with '$' as written, for systemd to expand.
		words, _ = splitWords(v, false)
	}
	argv = make([]string, len(words))
	for i, w := range words {
		text := w.text
		if len(w.specifiers) > 0 {
			bad(fmt.Sprintf("uses specifier %s in %q; a declaration's args are literal", w.specifiers[0], w.raw),
				"write the value the specifier stands for")
			continue
		}
		if w.raw == ";" {
			bad("holds several commands separated by ';'", "move the others to ExecStartPre= or ExecStartPost=")
			continue
		}
		if err := checkValue("argument", text); err != nil {
			bad(fmt.Sprintf("argument %d %s", i, err.(*FieldError).Reason), "remove it")
			continue
		}
		argv[i] = text
	}
	switch {
	case len(words[0].specifiers) > 0:
	case !strings.HasPrefix(words[0].text, "/"):
		bad(fmt.Sprintf("runs %q, which is not an absolute path", words[0].text), "name the program by its absolute path")
	case strings.Contains(words[0].text, "$"):
		bad(fmt.Sprintf("the program %q comes from a variable", words[0].text), "name the program by its absolute path")
	}
	if len(probs) > 0 {
		return nil, "", false, probs
	}
	return argv, prefix, expand, nil
}

// literal returns a typed value unquoted when it holds no specifier, so it
// can be a declaration's literal value; false otherwise.
func literal(e *entry) (string, bool) {
	if !strings.ContainsAny(e.value, "%\\\"'") {
		return e.value, true
	}
	if strings.ContainsAny(e.value, "\\\"'") {
		return "", false
	}
	words, err := splitWords(e.value, false)
	if err != nil || len(words) != 1 || len(words[0].specifiers) > 0 {
		return "", false
	}
	return words[0].text, true
}

// keepVerbatim keeps e in systemd_keys as written.
func (p *Parsed) keepVerbatim(e *entry) {
	p.Service.SystemdKeys = append(p.Service.SystemdKeys, declaration.UnitKey{Section: e.section, Key: e.key, Value: e.value})
}

// scalar reads one single-valued typed directive into its field.
func (p *Parsed) scalar(key string, e *entry) {
	u := &p.Service.UnitSettings
	if e.value == "" {
		return // an empty assignment resets to the default
	}
	val, ok := literal(e)
	if !ok {
		// A specifier or quoting a field would not reproduce: kept as written.
		p.keepVerbatim(e)
		return
	}
	bad := func(string) { p.keepVerbatim(e) }
	switch key {
	case "Description":
		u.Description = val
	case "WorkingDirectory":
		if !strings.HasPrefix(val, "/") || filepath.Clean(val) != val {
			bad("an absolute, clean path")
			return
		}
		u.WorkingDirectory = val
	case "User":
		u.User = val
	case "Group":
		u.Group = val
	case "UMask":
		u.UMask = val
	case "Restart":
		u.Restart = val
	case "RestartSec":
		u.RestartSec = val
	case "TimeoutStopSec":
		u.TimeoutStopSec = val
	case "WatchdogSec":
		u.WatchdogSec = val
	case "StartLimitIntervalSec":
		u.StartLimitIntervalSec = val
	case "StartLimitBurst":
		n, err := strconv.Atoi(val)
		if err != nil {
			bad("a number")
			return
		}
		u.StartLimitBurst = &n
	case "Type":
		u.Type = val
	case "PIDFile":
		u.PIDFile = val
	case "StandardOutput":
		u.StdoutPath = strings.TrimPrefix(val, "append:")
	case "StandardError":
		u.StderrPath = strings.TrimPrefix(val, "append:")
	case "Nice":
		n, err := strconv.Atoi(val)
		if err != nil {
			bad("a number")
			return
		}
		u.Nice = &n
	case "IOSchedulingClass":
		u.IOSchedulingClass = val
	case "IOSchedulingPriority":
		n, err := strconv.Atoi(val)
		if err != nil {
			bad("a number")
			return
		}
		u.IOSchedulingPriority = &n
	case "KillMode":
		u.KillMode = val
	case "Delegate":
		b, ok := parseBool(val)
		if !ok {
			bad("yes or no (a list of controllers is not carried)")
			return
		}
		u.Delegate = &b
	default:
		if n, ok := limitName(key); ok {
			soft, hard, found := strings.Cut(val, ":")
			if !found {
				hard = soft
			}
			if _, ok := declaration.ParseLimitValue(soft); !ok {
				bad("a limit (a number or infinity, or SOFT:HARD)")
				return
			}
			if _, ok := declaration.ParseLimitValue(hard); !ok {
				bad("a limit (a number or infinity, or SOFT:HARD)")
				return
			}
			if u.Limits == nil {
				u.Limits = map[string]declaration.Limit{}
			}
			u.Limits[n] = declaration.Limit{Soft: soft, Hard: hard}
		}
	}
}

func parseBool(v string) (bool, bool) {
	switch strings.ToLower(v) {
	case "1", "yes", "y", "true", "t", "on":
		return true, true
	case "0", "no", "n", "false", "f", "off":
		return false, true
	}
	return false, false
}

// list reads an accumulating typed directive into its field.
func (p *Parsed) list(key string, es []*entry) {
	u := &p.Service.UnitSettings
	var out []string
	for _, e := range es {
		switch key {
		case "After", "Before", "Wants", "Requires", "WantedBy", "RequiredBy":
			val, ok := literal(e)
			if !ok {
				p.block(e, key, "uses a specifier or quoting a list of unit names does not carry", "write the unit names out")
				continue
			}
			out = append(out, strings.Fields(val)...)
		default:
			// Command lines and environment files are kept as written.
			out = append(out, e.value)
		}
	}
	switch key {
	case "After":
		u.After = out
	case "Before":
		u.Before = out
	case "Wants":
		u.Wants = out
	case "Requires":
		u.Requires = out
	case "WantedBy":
		u.WantedBy = out
	case "RequiredBy":
		u.RequiredBy = out
	case "ExecStartPre":
		u.ExecStartPre = out
	case "ExecStartPost":
		u.ExecStartPost = out
	case "ExecReload":
		u.ExecReload = out
	case "ExecStop":
		u.ExecStop = out
	case "ExecStopPost":
		u.ExecStopPost = out
	case "EnvironmentFile":
		u.EnvironmentFiles = out
	}
}
