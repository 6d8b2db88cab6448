package beacon

import (
	"fmt"
	"strings"
)

// The words the read half says about a block, the same for every reader
// (the CLI's text, the desktop page).

// Detail says, in one line, the one thing an operator should read next to
// a row's state: why it is unknown, an incomplete declaration, the failing
// sentence or last exit, the last stderr line and the answering summary.
func (r Row) Detail() string {
	var parts []string
	if r.State == StateUnknown && r.Beacon.Reason != "" {
		parts = append(parts, r.Beacon.Reason)
	}
	if r.Incomplete {
		parts = append(parts, "declaration_incomplete")
	}
	if r.Sentence != "" {
		parts = append(parts, r.Sentence)
	} else if r.LastExit != nil && r.State == StateFailed {
		parts = append(parts, fmt.Sprintf("last exit %d", *r.LastExit))
	}
	if r.LastStderr != "" {
		parts = append(parts, "stderr: "+r.LastStderr)
	}
	if r.Answering != nil {
		parts = append(parts, r.Answering.Summary())
	}
	return strings.Join(parts, "; ")
}

// Summary says in one line where the answering question stands.
func (a *Answering) Summary() string {
	switch f := a.Finished; {
	case a.State == AnswerUnreadable:
		return "answering unreadable: " + a.Unreadable
	case a.State == AnswerStood:
		s := fmt.Sprintf("answering stood %.0fs (bound %.0fs)", a.WaitedSeconds, a.BoundSeconds)
		if a.AlreadyAttempted {
			s += ", already_attempted"
		} else if len(a.Recovery) == 0 {
			s += ", no recovery recorded"
		}
		if r := a.RecordingRefusal; r != nil {
			s += ", recording_refusal: " + r.Op + " " + r.File + ": " + r.Cause
		}
		return s
	case a.State == AnswerWaiting:
		return fmt.Sprintf("answering waiting %.0fs", a.WaitedSeconds)
	case a.State != AnswerFinished || f == nil:
		// asked, or finished without an outcome: the state says it all
	case f.Answered != nil && f.Answered.Successful:
		return fmt.Sprintf("answered %d in %dms", f.Answered.Status, f.Answered.ElapsedMS)
	case f.Answered != nil:
		return fmt.Sprintf("answered %d, not successful: %s", f.Answered.Status, f.Answered.Detail)
	case f.Refused != nil:
		return "answering refused: " + f.Refused.Cause
	}
	return "answering " + a.State
}

// Summary says in one line what the observing host saw of another host's
// service and whether it attempted a recovery.
func (pr PeerRecovery) Summary() string {
	what := fmt.Sprintf("%s on %s", pr.Service, pr.Host)
	switch {
	case pr.Unreadable != "":
		return "its waiting list unreadable: " + pr.Unreadable
	case pr.NotRecovered != "":
		return what + " standing, not recovered: " + pr.NotRecovered
	case pr.AlreadyRecovered:
		return fmt.Sprintf("%s still standing (%d held, %.0fs), already_recovered", what, pr.Held, pr.WaitedSeconds)
	case len(pr.Recovery) > 0:
		s := fmt.Sprintf("%s standing (%d held, %.0fs > %.0fs): recovery attempted", what, pr.Held, pr.WaitedSeconds, pr.BoundSeconds)
		if pr.RecordingRefusal != nil {
			s += "; recording_refusal: " + pr.RecordingRefusal.Cause
		}
		return s
	}
	return what + " standing"
}
