package register

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Verdict is the attempt's state in one word: running, complete or
// incomplete.
func (r Recovery) Verdict() string {
	switch {
	case r.State == Running:
		return Running
	case r.Complete:
		return "complete"
	}
	return "incomplete"
}

// Lines says what the attempt did, one line per repair step (with its exit
// code), the restart (with the unit's new pid) and each alert channel; a
// refusal names its code and cause. alert.Summary is the one-line form.
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
		switch {
		case a.OK:
			out = append(out, fmt.Sprintf("alert %s (%s): %s", a.Channel, a.Type, a.Answer))
		case a.Answer == AlertNotRun:
			out = append(out, fmt.Sprintf("alert %s (%s): not run: %s", a.Channel, a.Type, a.Cause))
		default:
			out = append(out, fmt.Sprintf("alert %s (%s): failed: %s", a.Channel, a.Type, strings.TrimSpace(a.Answer+" "+a.Cause)))
		}
	}
	return out
}

// RegisterLines are the attempt as `service recoveries` lists it: when,
// what and its verdict, the question that stood, then Lines indented.
func (r Recovery) RegisterLines() []string {
	by := ""
	if r.ObservedBy != "" {
		by = " (observed by " + r.ObservedBy + ")"
	}
	out := []string{
		fmt.Sprintf("%s  %s on %s (%s)%s: %s", r.When.Format("2006-01-02 15:04:05Z07:00"), r.Service, r.Host, r.Unit, by, r.Verdict()),
		fmt.Sprintf("  question: %s %s at %s, unanswered %.1fs of bound %.0fs since %s, held requests %d",
			r.Question.Method, r.Question.Path, r.Question.Endpoint, r.WaitedSeconds, r.BoundSeconds, r.Since.Format("15:04:05"), r.HeldRequests),
	}
	for _, l := range r.Lines() {
		out = append(out, "  "+l)
	}
	return out
}

// BeaconLines say the recovery a beacon carries (raw: a Recovery as JSON):
// its verdict and start, then Lines indented. Raw that is not a Recovery
// is said unreadable; empty raw says nothing.
func BeaconLines(raw json.RawMessage) []string {
	if len(raw) == 0 {
		return nil
	}
	var r Recovery
	if err := json.Unmarshal(raw, &r); err != nil {
		return []string{fmt.Sprintf("recovery: unreadable: %v", err)}
	}
	out := []string{fmt.Sprintf("recovery %s, started %s:", r.Verdict(), r.When.UTC().Format(time.RFC3339))}
	for _, l := range r.Lines() {
		out = append(out, "  "+l)
	}
	return out
}
