package declaration

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// unitSettings checks the UnitSettings of one declaration at path p on a
// target of os: each value in its grammar, and each field only where the
// target's init system has the concept.
func (v *validator) unitSettings(s *Service, os, p string) {
	u := &s.UnitSettings
	linuxOnly := func(field string, set bool) {
		if set && os == OSDarwin {
			v.add(p+"."+field, "launchd has no equivalent; only allowed when os is linux")
		}
	}
	darwinOnly := func(field string, set bool) {
		if set && os == OSLinux {
			v.add(p+"."+field, "systemd has no equivalent; only allowed when os is darwin")
		}
	}
	if msg := textProblem(u.Description); msg != "" {
		v.add(p+".description", "%s", msg)
	}
	linuxOnly("description", u.Description != "")
	for _, f := range []struct{ name, val string }{
		{"working_directory", u.WorkingDirectory}, {"stdout_path", u.StdoutPath},
		{"stderr_path", u.StderrPath}, {"pid_file", u.PIDFile},
	} {
		if f.val == "" {
			continue
		}
		if msg := PathProblem(f.val); msg != "" {
			v.add(p+"."+f.name, "%s", msg)
		} else if strings.ContainsAny(f.val, "%$\\") && os == OSLinux {
			v.add(p+"."+f.name, "%q holds '%%', '$' or '\\', which systemd would not read literally", f.val)
		}
	}
	linuxOnly("pid_file", u.PIDFile != "")
	for _, f := range []struct{ name, val string }{{"user", u.User}, {"group", u.Group}} {
		if f.val != "" && !Grammar(f.val, userFirst, userRest, 32) && !Grammar(f.val, digits, digits, 10) {
			v.add(p+"."+f.name, "%q is neither a user or group name (letter or '_' first, then letters, digits, '_', '.', '-'; at most 32) nor a number", f.val)
		}
	}
	if u.UMask != "" && (len(u.UMask) < 3 || len(u.UMask) > 4 || strings.Trim(u.UMask, "01234567") != "") {
		v.add(p+".umask", "%q is not an octal mode of 3 or 4 digits, such as 0022", u.UMask)
	}
	switch u.Restart {
	case "":
	case "no", "always", "on-success", "on-failure", "on-abort":
	case "on-abnormal", "on-watchdog":
		linuxOnly("restart", true)
	default:
		v.add(p+".restart", "must be no, always, on-success, on-failure, on-abnormal, on-abort or on-watchdog, got %q", u.Restart)
	}
	if u.Restart != "" && s.KeepAlive != nil {
		v.add(p+".restart", "set together with keep_alive; restart says it all, drop keep_alive")
	}
	v.timeSpan(p+".restart_sec", u.RestartSec, os == OSDarwin)
	v.timeSpan(p+".timeout_stop_sec", u.TimeoutStopSec, os == OSDarwin)
	v.timeSpan(p+".watchdog_sec", u.WatchdogSec, false)
	linuxOnly("watchdog_sec", u.WatchdogSec != "")
	v.timeSpan(p+".start_limit_interval_sec", u.StartLimitIntervalSec, false)
	linuxOnly("start_limit_interval_sec", u.StartLimitIntervalSec != "")
	linuxOnly("start_limit_burst", u.StartLimitBurst != nil)
	if u.StartLimitBurst != nil && *u.StartLimitBurst < 0 {
		v.add(p+".start_limit_burst", "must be 0 or more, got %d", *u.StartLimitBurst)
	}
	switch u.Type {
	case "", "simple":
	case "exec", "forking", "oneshot", "dbus", "notify", "notify-reload", "idle":
		linuxOnly("type", true)
	default:
		v.add(p+".type", "must be simple, exec, forking, oneshot, dbus, notify, notify-reload or idle, got %q", u.Type)
	}
	linuxOnly("expand_env", u.ExpandEnv)
	switch strings.TrimPrefix(u.ExecStartPrefix, "-") {
	case "", "+", "!", "!!":
		linuxOnly("exec_start_prefix", u.ExecStartPrefix != "")
	default:
		v.add(p+".exec_start_prefix", "must be '-' and/or one of '+', '!', '!!', got %q", u.ExecStartPrefix)
	}
	for _, f := range []struct {
		name  string
		lines []string
	}{
		{"exec_start_pre", u.ExecStartPre}, {"exec_start_post", u.ExecStartPost}, {"exec_reload", u.ExecReload},
		{"exec_stop", u.ExecStop}, {"exec_stop_post", u.ExecStopPost},
	} {
		linuxOnly(f.name, len(f.lines) > 0)
		for i, l := range f.lines {
			if msg := commandLineProblem(l); msg != "" {
				v.add(at(p, f.name, i), "%s", msg)
			}
		}
	}
	linuxOnly("environment_files", len(u.EnvironmentFiles) > 0)
	for i, f := range u.EnvironmentFiles {
		if msg := PathProblem(strings.TrimPrefix(f, "-")); msg != "" {
			v.add(at(p, "environment_files", i), "%s", msg)
		}
	}
	for _, f := range []struct {
		name  string
		names []string
	}{
		{"after", u.After}, {"before", u.Before}, {"wants", u.Wants}, {"requires", u.Requires},
		{"wanted_by", u.WantedBy}, {"required_by", u.RequiredBy},
	} {
		linuxOnly(f.name, len(f.names) > 0)
		for i, n := range f.names {
			if !Grammar(n, systemdFirst, systemdRest, MaxUnitNameBytes) || dependencyType(n) == "" {
				v.add(at(p, f.name, i), "%q is not a systemd unit name", n)
			}
		}
	}
	v.limits(u.Limits, os, p+".limits")
	if u.Nice != nil && (*u.Nice < -20 || *u.Nice > 19) {
		v.add(p+".nice", "must be -20..19, got %d", *u.Nice)
	}
	switch u.ProcessType {
	case "", "Background", "Standard", "Adaptive", "Interactive":
		darwinOnly("process_type", u.ProcessType != "")
	default:
		v.add(p+".process_type", "must be Background, Standard, Adaptive or Interactive, got %q", u.ProcessType)
	}
	switch u.IOSchedulingClass {
	case "", "idle":
	case "realtime", "best-effort":
		linuxOnly("io_scheduling_class", true)
	default:
		v.add(p+".io_scheduling_class", "must be realtime, best-effort or idle, got %q", u.IOSchedulingClass)
	}
	linuxOnly("io_scheduling_priority", u.IOSchedulingPriority != nil)
	if u.IOSchedulingPriority != nil && (*u.IOSchedulingPriority < 0 || *u.IOSchedulingPriority > 7) {
		v.add(p+".io_scheduling_priority", "must be 0..7, got %d", *u.IOSchedulingPriority)
	}
	switch u.KillMode {
	case "", "control-group", "mixed", "process", "none":
		linuxOnly("kill_mode", u.KillMode != "")
	default:
		v.add(p+".kill_mode", "must be control-group, mixed, process or none, got %q", u.KillMode)
	}
	linuxOnly("delegate", u.Delegate != nil)
	darwinOnly("abandon_process_group", u.AbandonProcessGroup)
	linuxOnly("systemd_keys", len(u.SystemdKeys) > 0)
	for i, k := range u.SystemdKeys {
		v.systemdKey(s, k, at(p, "systemd_keys", i))
	}
	darwinOnly("launchd_keys", len(u.LaunchdKeys) > 0)
	keys := make([]string, 0, len(u.LaunchdKeys))
	for k := range u.LaunchdKeys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		kp := fmt.Sprintf("%s.launchd_keys[%q]", p, k)
		switch {
		case !Grammar(k, anyAlnum, anyAlnum, 128):
			v.add(kp, "%q is not a launchd key (letters and digits)", k)
		case LaunchdKeyNames[k] != "" && fieldSet(s, LaunchdKeyNames[k], k):
			v.add(kp, "is also rendered from field %s; keep one of them", LaunchdKeyNames[k])
		}
		if msg := plistValueProblem(u.LaunchdKeys[k]); msg != "" {
			v.add(kp, "%s", msg)
		}
	}
}

// textProblem says why s cannot be one line of a unit file, or "".
func textProblem(s string) string {
	switch {
	case hasControl(s):
		return "contains NUL or a line break"
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	case strings.HasSuffix(s, "\\"):
		return "ends in '\\', which would join the next line of the unit"
	}
	return ""
}

// commandLineProblem says why l is not one systemd command line: optional
// prefixes (-, @, +, !, !!, :, |) and an absolute program first.
func commandLineProblem(l string) string {
	if msg := textProblem(l); msg != "" {
		return msg
	}
	rest := strings.TrimLeft(strings.TrimSpace(l), "-@+!:|")
	rest = strings.TrimLeft(rest, "\"'")
	if !strings.HasPrefix(rest, "/") {
		return fmt.Sprintf("%q does not run an absolute program", l)
	}
	return ""
}

func (v *validator) systemdKey(s *Service, k UnitKey, p string) {
	switch k.Section {
	case "Unit", "Service", "Install":
	default:
		// An X- section is ignored by systemd and kept for applications.
		if !strings.HasPrefix(k.Section, "X-") || !Grammar(k.Section, anyAlnum, anyAlnumDsh, 128) {
			v.add(p+".section", "must be Unit, Service or Install (or an X- section: X- then letters, digits, '-'), got %q", k.Section)
		}
	}
	switch {
	case !Grammar(k.Key, anyAlnum, anyAlnumDsh, 128):
		v.add(p+".key", "%q is not a systemd directive (letters, digits, '-')", k.Key)
	case k.Key == "ExecStart":
		v.add(p+".key", "%s is rendered from field %s; set that field instead", k.Key, SystemdKeyNames[k.Key])
	case SystemdKeyNames[k.Key] != "" && fieldSet(s, SystemdKeyNames[k.Key], k.Key):
		v.add(p+".key", "%s is also rendered from field %s; keep one of them", k.Key, SystemdKeyNames[k.Key])
	case strings.HasPrefix(k.Key, "Limit") && limitByDirective(k.Key) != "" && s.Limits[limitByDirective(k.Key)] != (Limit{}):
		v.add(p+".key", "%s is also rendered from field limits.%s; keep one of them", k.Key, limitByDirective(k.Key))
	}
	if msg := textProblem(k.Value); msg != "" {
		v.add(p+".value", "%s", msg)
	}
}

func limitByDirective(d string) string {
	for name, ks := range LimitNames {
		if ks[0] == d {
			return name
		}
	}
	return ""
}

func (v *validator) limits(ls map[string]Limit, os, p string) {
	names := make([]string, 0, len(ls))
	for n := range ls {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		l := ls[n]
		np := p + "." + n
		ks, ok := LimitNames[n]
		switch {
		case !ok:
			v.add(np, "%q is not a resource limit (cpu, fsize, data, stack, core, rss, nofile, as, nproc, memlock, locks, sigpending, msgqueue, nice, rtprio, rttime)", n)
			continue
		case os == OSDarwin && ks[1] == "":
			v.add(np, "launchd has no %s limit", n)
		case l.Soft == "" && l.Hard == "":
			v.add(np, "sets neither soft nor hard")
		case os == OSLinux && (l.Soft == "" || l.Hard == ""):
			v.add(np, "systemd sets both sides of a limit; give soft and hard")
		}
		for _, side := range []struct{ name, val string }{{"soft", l.Soft}, {"hard", l.Hard}} {
			if side.val == "" {
				continue
			}
			if _, ok := ParseLimitValue(side.val); !ok {
				v.add(np+"."+side.name, "%q is neither a number (with an optional K, M, G, T, P or E) nor infinity", side.val)
			} else if os == OSDarwin && side.val == "infinity" {
				v.add(np+"."+side.name, "launchd takes a number, not infinity")
			}
		}
	}
}

// ParseLimitValue reads a resource limit value: "infinity" (ok, and
// math.MaxUint64) or decimal digits with an optional binary suffix K, M, G,
// T, P or E.
func ParseLimitValue(s string) (uint64, bool) {
	if s == "infinity" {
		return math.MaxUint64, true
	}
	mult := uint64(1)
	if n := len(s); n > 0 {
		if i := strings.IndexByte("KMGTPE", s[n-1]); i >= 0 {
			mult = 1 << (10 * (i + 1))
			s = s[:n-1]
		}
	}
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n > math.MaxUint64/mult {
		return 0, false
	}
	return n * mult, true
}

func (v *validator) timeSpan(p, val string, wholeSeconds bool) {
	if val == "" {
		return
	}
	us, ok := ParseTimeSpan(val)
	switch {
	case !ok:
		v.add(p, "%q is not a systemd time span (such as 5, 500ms, 1min 30s or infinity)", val)
	case wholeSeconds && (us < 0 || us%1_000_000 != 0):
		v.add(p, "%q is not a whole number of seconds, which launchd needs", val)
	}
}

// timeUnits are systemd's time span units in microseconds.
var timeUnits = map[string]int64{
	"us": 1, "usec": 1, "µs": 1, "ms": 1000, "msec": 1000,
	"s": 1e6, "sec": 1e6, "second": 1e6, "seconds": 1e6,
	"m": 60e6, "min": 60e6, "minute": 60e6, "minutes": 60e6,
	"h": 3600e6, "hr": 3600e6, "hour": 3600e6, "hours": 3600e6,
	"d": 86400e6, "day": 86400e6, "days": 86400e6,
	"w": 7 * 86400e6, "week": 7 * 86400e6, "weeks": 7 * 86400e6,
	"M": 2629800e6, "month": 2629800e6, "months": 2629800e6,
	"y": 31557600e6, "year": 31557600e6, "years": 31557600e6,
}

// ParseTimeSpan reads a systemd time span ("5" is seconds; "1min 30s",
// "500ms", "2.5s") into microseconds; "infinity" is -1.
func ParseTimeSpan(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	if s == "infinity" {
		return -1, true
	}
	if s == "" {
		return 0, false
	}
	var total int64
	for s != "" {
		s = strings.TrimLeft(s, " \t")
		i := 0
		for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
			i++
		}
		if i == 0 {
			return 0, false
		}
		num, err := strconv.ParseFloat(s[:i], 64)
		if err != nil {
			return 0, false
		}
		s = strings.TrimLeft(s[i:], " \t")
		j := 0
		for j < len(s) && (s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] == 0xc2 || s[j] == 0xb5) {
			j++
		}
		mult := int64(1e6)
		if j > 0 {
			m, ok := timeUnits[s[:j]]
			if !ok {
				return 0, false
			}
			mult = m
		}
		s = s[j:]
		total += int64(num * float64(mult))
	}
	return total, true
}

// plistValueProblem says why x is not one XML property-list value, or "".
// The full check (that it parses) is the renderer's; here its shape.
func plistValueProblem(x string) string {
	t := strings.TrimSpace(x)
	switch {
	case strings.ContainsRune(x, 0) || !utf8.ValidString(x):
		return "holds NUL or invalid UTF-8"
	case !strings.HasPrefix(t, "<") || !strings.HasSuffix(t, ">"):
		return fmt.Sprintf("%q is not an XML property-list value such as <true/> or <string>x</string>", x)
	case strings.Contains(t, "<!") || strings.Contains(t, "<?"):
		return "holds a declaration or comment; give the value alone"
	}
	return ""
}

// fieldSet reports whether the typed field named field (as in
// SystemdKeyNames and LaunchdKeyNames) is set on s, so a kept key that
// renders the same directive would set it twice. key tells the launchd keys
// of one field apart.
func fieldSet(s *Service, field, key string) bool {
	u := &s.UnitSettings
	switch field {
	case "description":
		return u.Description != ""
	case "working_directory":
		return u.WorkingDirectory != ""
	case "user":
		return u.User != ""
	case "group":
		return u.Group != ""
	case "umask":
		return u.UMask != ""
	case "stdout_path":
		return u.StdoutPath != ""
	case "stderr_path":
		return u.StderrPath != ""
	case "restart":
		return u.Restart != ""
	case "keep_alive":
		return s.KeepAlive != nil || u.Restart != ""
	case "restart_sec":
		return u.RestartSec != ""
	case "start_limit_interval_sec":
		return u.StartLimitIntervalSec != ""
	case "start_limit_burst":
		return u.StartLimitBurst != nil
	case "type":
		return u.Type != ""
	case "pid_file":
		return u.PIDFile != ""
	case "watchdog_sec":
		return u.WatchdogSec != ""
	case "nice":
		return u.Nice != nil
	case "process_type":
		return u.ProcessType != ""
	case "io_scheduling_class":
		return u.IOSchedulingClass != ""
	case "io_scheduling_priority":
		return u.IOSchedulingPriority != nil
	case "kill_mode":
		return u.KillMode != ""
	case "delegate":
		return u.Delegate != nil
	case "timeout_stop_sec":
		return u.TimeoutStopSec != ""
	case "abandon_process_group":
		return u.AbandonProcessGroup
	case "limits":
		for name, l := range u.Limits {
			if ks := LimitNames[name]; (key == "SoftResourceLimits" && l.Soft != "") || (key == "HardResourceLimits" && l.Hard != "") || ks[0] == key {
				return true
			}
		}
		return false
	case "env":
		// Environment= lines kept verbatim add to the declared env.
		return false
	}
	// Lists, program and unit are always rendered from their fields.
	return true
}

// dependencyUnitTypes are every systemd unit type: a dependency may name a
// unit of any of them (After=dev-ttyUSB0.device, Wants=system-foo.slice),
// even those stado never addresses on its own (SystemdUnitTypes).
var dependencyUnitTypes = []string{".service", ".socket", ".device", ".mount", ".automount", ".swap", ".target", ".path", ".timer", ".slice", ".scope"}

// dependencyType returns the suffix of n among dependencyUnitTypes, or "".
func dependencyType(n string) string {
	for _, s := range dependencyUnitTypes {
		if strings.HasSuffix(n, s) && len(n) > len(s) {
			return s
		}
	}
	return ""
}
