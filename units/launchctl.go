package units

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// LaunchdState is what `launchctl print <domain>/<label>` says about a job.
// Found is false when launchd does not hold the label; the other fields are
// then empty.
type LaunchdState struct {
	Found bool   `json:"found"`
	Label string `json:"label,omitempty"`
	// State is launchd's own word: running, not running, spawn scheduled, waiting...
	State string `json:"state,omitempty"`
	PID   int    `json:"pid,omitempty"`
	// LastExit is the last exit code; Exited is false while the job never exited.
	LastExit int  `json:"last_exit"`
	Exited   bool `json:"exited"`
	// LastSignal is launchd's description of the signal that ended the last
	// run ("Killed: 9"), when a signal did.
	LastSignal string   `json:"last_signal,omitempty"`
	Runs       int      `json:"runs"`
	Program    string   `json:"program,omitempty"`
	Arguments  []string `json:"arguments,omitempty"`
	Path       string   `json:"path,omitempty"`
	// Domain is "system", "gui/<uid>", "user/<uid>" ...
	Domain     string `json:"domain,omitempty"`
	StdoutPath string `json:"stdout_path,omitempty"`
	StderrPath string `json:"stderr_path,omitempty"`
}

// ParseLaunchctlPrint reads the output of `launchctl print` for one service
// (stdout and stderr together). Only the service's own top-level fields
// count; nested blocks (endpoints, environment, semaphores) are skipped, the
// arguments block excepted. The refusal "Could not find service" yields
// Found false and no error. Output that names no state, pid, runs or exit
// code at all is an error: the format changed or it is not launchctl's.
func ParseLaunchctlPrint(out []byte) (LaunchdState, error) {
	if bytes.Contains(out, []byte("Could not find service")) {
		return LaunchdState{Found: false}, nil
	}
	st := LaunchdState{Found: true}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	depth, top := 0, 0
	first := true
	inArgs := false
	known := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if first {
			first = false
			if head, ok := strings.CutSuffix(line, "= {"); ok {
				name := strings.TrimSpace(head)
				st.Label = name[strings.LastIndexByte(name, '/')+1:]
				depth, top = 1, 1
				continue
			}
		}
		if line == "}" {
			if inArgs {
				inArgs = false
			}
			depth--
			continue
		}
		if inArgs {
			st.Arguments = append(st.Arguments, line)
			continue
		}
		// A block opens with "key = {" or, inside endpoints and other
		// dictionaries, with "\"name\" => {"; every block closes with "}".
		if strings.HasSuffix(line, "{") {
			key := strings.TrimSpace(strings.TrimSuffix(strings.TrimSuffix(line, "{"), " "))
			if depth == top && key == "arguments =" {
				inArgs = true
			}
			depth++
			continue
		}
		if depth != top {
			continue
		}
		k, v, ok := strings.Cut(line, " = ")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case "state":
			st.State, known = v, true
		case "pid":
			if n, err := strconv.Atoi(v); err == nil {
				st.PID, known = n, true
			}
		case "runs":
			if n, err := strconv.Atoi(v); err == nil {
				st.Runs, known = n, true
			}
		case "last exit code":
			known = true
			num, _, _ := strings.Cut(v, ":")
			if n, err := strconv.Atoi(strings.TrimSpace(num)); err == nil {
				st.LastExit, st.Exited = n, true
			}
		case "last terminating signal":
			st.LastSignal, st.Exited = v, true
		case "program":
			st.Program = v
		case "path":
			st.Path = v
		case "stdout path":
			st.StdoutPath = v
		case "stderr path":
			st.StderrPath = v
		case "domain":
			st.Domain = normalizeDomain(v)
		}
	}
	if err := sc.Err(); err != nil {
		return LaunchdState{}, fmt.Errorf("read launchctl print output: %w", err)
	}
	if !known {
		return LaunchdState{}, fmt.Errorf("launchctl print output names no state, pid, runs or exit code: %q", firstLine(out))
	}
	return st, nil
}

// normalizeDomain turns launchd's domain names into target form:
// "com.apple.xpc.launchd.domain.system" → "system", "gui/501 [100024]" →
// "gui/501".
func normalizeDomain(v string) string {
	if i := strings.Index(v, " ["); i >= 0 {
		v = v[:i]
	}
	if v == "com.apple.xpc.launchd.domain.system" {
		return "system"
	}
	return v
}

func firstLine(b []byte) string {
	line, _, _ := bytes.Cut(bytes.TrimSpace(b), []byte("\n"))
	if len(line) > 120 {
		line = line[:120]
	}
	return string(line)
}

// ParseLaunchctlList reads the output of `launchctl list LABEL`: the
// job's dictionary in launchd's old-style property-list text ("PID" = 42;
// "LastExitStatus" = 256; "ProgramArguments" = ( ... );). LastExitStatus is
// a wait status: a signal in its low bits, else the exit code in the next
// byte. A label launchd does not hold ("Could not find service") is Found
// false with no error; text that names no Label is an error.
func ParseLaunchctlList(out []byte) (LaunchdState, error) {
	if bytes.Contains(out, []byte("Could not find service")) {
		return LaunchdState{Found: false}, nil
	}
	st := LaunchdState{Found: true}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	inArgs, depth := false, 0
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "":
			continue
		case line == "{":
			depth++
			continue
		case line == "};" || line == "}":
			depth--
			continue
		case line == ");":
			inArgs = false
			continue
		case inArgs:
			st.Arguments = append(st.Arguments, unquoteOldStyle(strings.TrimSuffix(line, ";")))
			continue
		}
		k, v, ok := strings.Cut(line, " = ")
		if !ok || depth != 1 {
			if strings.HasSuffix(line, "{") {
				depth++
			}
			continue
		}
		key := unquoteOldStyle(strings.TrimSpace(k))
		v = strings.TrimSpace(v)
		if v == "(" {
			inArgs = key == "ProgramArguments"
			if !inArgs {
				depth++ // skip an array we do not read
				for sc.Scan() && strings.TrimSpace(sc.Text()) != ");" {
				}
				depth--
			}
			continue
		}
		if v == "{" {
			depth++
			continue
		}
		val := unquoteOldStyle(strings.TrimSuffix(v, ";"))
		switch key {
		case "Label":
			st.Label = val
		case "PID":
			if n, err := strconv.Atoi(val); err == nil {
				st.PID = n
				st.State = "running"
			}
		case "LastExitStatus":
			if n, err := strconv.Atoi(val); err == nil {
				st.Exited = true
				if sig := n & 0x7f; sig != 0 {
					st.LastSignal = "signal: " + strconv.Itoa(sig)
				} else {
					st.LastExit = (n >> 8) & 0xff
				}
			}
		case "Program":
			st.Program = val
		case "StandardOutPath":
			st.StdoutPath = val
		case "StandardErrorPath":
			st.StderrPath = val
		}
	}
	if err := sc.Err(); err != nil {
		return LaunchdState{}, fmt.Errorf("read launchctl list output: %w", err)
	}
	if st.Label == "" {
		return LaunchdState{}, fmt.Errorf("launchctl list output names no Label: %q", firstLine(out))
	}
	if st.Program == "" && len(st.Arguments) > 0 {
		st.Program = st.Arguments[0]
	}
	if st.State == "" {
		st.State = "not running"
	}
	return st, nil
}

// unquoteOldStyle removes the double quotes of an old-style property-list
// string and its backslash escapes.
func unquoteOldStyle(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		if u, err := strconv.Unquote(s); err == nil {
			return u
		}
		return s[1 : len(s)-1]
	}
	return s
}
