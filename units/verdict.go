package units

import (
	"fmt"
	"strconv"
)

// The states a Verdict reports, the same words for both init systems.
const (
	StateActive   = "active"   // a process runs (PID when known)
	StateInactive = "inactive" // loaded, nothing runs, nothing failed
	StateMissing  = "missing"  // the init system does not hold the unit
	StateFailed   = "failed"   // stopped after a failure, not restarted
	StateFailing  = "failing"  // loaded, no process, the last run exited nonzero, the supervisor keeps (or kept) restarting it
	StateMasked   = "masked"   // systemd: the unit is masked (linked to /dev/null), so nothing can start it
)

// Verdict is stado's reading of one unit.
type Verdict struct {
	Unit  string `json:"unit"`
	State string `json:"state"`
	PID   int    `json:"pid,omitempty"`
	// LastExit is the last run's exit code (the signal number when Signaled).
	LastExit int  `json:"last_exit"`
	Signaled bool `json:"signaled,omitempty"`
	// Starts is how many times the supervisor has started the program.
	Starts int `json:"starts"`
	// Detail is the init system's own words, e.g. "activating (auto-restart)".
	Detail string `json:"detail,omitempty"`
	// Sentence explains a failing unit; empty otherwise.
	Sentence string `json:"sentence,omitempty"`
}

// FailingSentence is the one sentence a failing unit is reported with.
func FailingSentence(unit, code string, starts int) string {
	return fmt.Sprintf("%s runs no process: its last run exited %s and its supervisor has started it %d time(s)", unit, code, starts)
}

func (v *Verdict) fail() {
	v.State = StateFailing
	code := strconv.Itoa(v.LastExit)
	if v.Signaled {
		code = "on signal " + code
	}
	v.Sentence = FailingSentence(v.Unit, code, v.Starts)
}

// SystemdProperties are the unit properties a verdict is read from.
type SystemdProperties struct {
	LoadState   string `json:"load_state"`
	ActiveState string `json:"active_state"`
	SubState    string `json:"sub_state"`
	Result      string `json:"result"`
	MainPID     uint32 `json:"main_pid"`
	// ExecMainCode is the siginfo code of the main process's end: 1 exited,
	// 2 killed, 3 dumped core; 0 while it never ended.
	ExecMainCode   int32  `json:"exec_main_code"`
	ExecMainStatus int32  `json:"exec_main_status"`
	NRestarts      uint32 `json:"n_restarts"`
}

const (
	cldExited = 1
	cldKilled = 2
	cldDumped = 3
)

// VerdictFromSystemd reads a verdict from systemd's properties. A unit in
// its restart delay (activating/auto-restart) whose last run ended badly is
// failing, and so is a failed unit the supervisor had restarted before it
// gave up (its start limit); a failed unit never restarted is failed.
func VerdictFromSystemd(unit string, p SystemdProperties) Verdict {
	v := Verdict{Unit: unit, Detail: p.ActiveState}
	if p.SubState != "" {
		v.Detail = fmt.Sprintf("%s (%s)", p.ActiveState, p.SubState)
	}
	if p.LoadState == "masked" {
		v.State = StateMasked
		v.Detail = "masked: linked to /dev/null, so nothing can start it until it is unmasked"
		return v
	}
	if p.LoadState == "not-found" || p.LoadState == "" {
		v.State = StateMissing
		v.Detail = p.LoadState
		return v
	}
	v.LastExit = int(p.ExecMainStatus)
	v.Signaled = p.ExecMainCode == cldKilled || p.ExecMainCode == cldDumped
	ran := p.ExecMainCode != 0 || p.MainPID != 0 || p.NRestarts > 0
	if ran {
		v.Starts = int(p.NRestarts) + 1
	}
	badEnd := ((p.ExecMainCode == cldExited || p.ExecMainCode == 0) && p.ExecMainStatus != 0) || v.Signaled
	switch {
	case p.LoadState != "loaded":
		// error, bad-setting: the unit file itself is broken.
		v.State = StateFailed
		v.Detail = p.LoadState
	case p.ActiveState == "activating" && p.SubState == "auto-restart" && badEnd:
		// between two runs no main process runs, whatever MainPID says: a
		// unit that leaves processes behind (KillMode=process, a delegated
		// cgroup) can show a leftover one there
		v.fail()
	case p.MainPID != 0:
		v.State = StateActive
		v.PID = int(p.MainPID)
	case p.ActiveState == "failed" && badEnd && (p.NRestarts > 0 || p.Result == "start-limit-hit"):
		v.fail()
	case p.ActiveState == "failed":
		v.State = StateFailed
	case p.ActiveState == "active" || p.ActiveState == "reloading" || p.ActiveState == "deactivating":
		v.State = StateActive
	default:
		v.State = StateInactive
	}
	return v
}

// VerdictFromLaunchd reads a verdict from `launchctl print`. launchd has no
// failed state: a loaded job with no pid whose last run exited nonzero, or
// ended on a signal, is failing.
func VerdictFromLaunchd(unit string, st LaunchdState) Verdict {
	v := Verdict{Unit: unit, Detail: st.State}
	if !st.Found {
		v.State = StateMissing
		v.Detail = "not loaded"
		return v
	}
	v.Starts = st.Runs
	v.LastExit = st.LastExit
	switch {
	case st.PID > 0:
		v.State = StateActive
		v.PID = st.PID
	case st.LastSignal != "":
		v.Signaled = true
		if n, ok := signalNumber(st.LastSignal); ok {
			v.LastExit = n
		}
		v.fail()
	case st.Exited && st.LastExit != 0:
		v.fail()
	default:
		v.State = StateInactive
	}
	return v
}

// signalNumber reads the number from launchd's "Killed: 9".
func signalNumber(s string) (int, bool) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] < '0' || s[i] > '9' {
			n, err := strconv.Atoi(s[i+1:])
			return n, err == nil
		}
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}
