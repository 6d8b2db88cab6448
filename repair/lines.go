package repair

import (
	"fmt"
	"strings"
)

// Verdict is the attempt's state in one word: running, complete or
// incomplete.
func (r Recovery) Verdict() string {
	switch {
	case r.State == RecoveryRunning:
		return RecoveryRunning
	case r.Complete:
		return "complete"
	}
	return "incomplete"
}

// Lines says what the attempt did, one line per repair step (with its exit
// code), the restart (with the unit's new pid) and each alert channel; a
// refusal names its code and cause. Summary (alert.go) is the one-line form.
func (r Recovery) Lines() []string {
	var out []string
	for _, s := range r.Steps {
		exit := ""
		if s.ExitCode != nil {
			exit = fmt.Sprintf(" (exit %d)", *s.ExitCode)
		}
		if s.OK {
			out = append(out, fmt.Sprintf("repair %s: ok%s", s.Step, exit))
		} else {
			out = append(out, fmt.Sprintf("repair %s: refused (%s)%s: %s", s.Step, s.Code, exit, s.Refusal))
		}
	}
	if rs := r.Restart; rs != nil && rs.OK {
		out = append(out, fmt.Sprintf("restart %s: %s, pid %d", rs.Unit, rs.Answer, rs.PID))
	} else if rs != nil {
		out = append(out, fmt.Sprintf("restart %s: refused (%s): %s", rs.Unit, rs.Code, rs.Refusal))
	}
	for _, a := range r.Alerts {
		if a.OK {
			out = append(out, fmt.Sprintf("alert %s (%s): %s", a.Channel, a.Type, a.Answer))
		} else {
			out = append(out, fmt.Sprintf("alert %s (%s): failed: %s", a.Channel, a.Type, strings.TrimSpace(a.Answer+" "+a.Cause)))
		}
	}
	return out
}
