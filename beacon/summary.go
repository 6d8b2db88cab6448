package beacon

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
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
	if r.Drifted() {
		parts = append(parts, "drift: "+r.File.Reason)
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
	if r.Protocol != nil {
		parts = append(parts, r.Protocol.Summary())
	}
	return strings.Join(parts, "; ")
}

// Failed reports whether the row's unit failed or is failing.
func (r Row) Failed() bool { return r.State == StateFailed || r.State == StateFailing }

// Lines say a row in full, as `service status` does: the state, how far
// the beacon is trusted, the pid, an incomplete declaration, the failing
// sentence, the last exit (when failed) and stderr line, and the answering
// summary with its question. The recovery an answering block carries is
// repair's to say (repair.BeaconLines): beacon does not read it.
func (r Row) Lines() []string {
	out := []string{fmt.Sprintf("%s on %s (%s): %s", r.Service, r.Host, r.Unit, r.State)}
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if r.State == StateUnknown {
		add("  beacon: %s", r.Beacon.Reason)
	} else if r.Beacon.At != nil {
		add("  beacon: pass %d, %.0fs old", r.Beacon.Pass, r.Beacon.AgeSeconds)
	}
	if r.PID != 0 {
		add("  pid: %d", r.PID)
	}
	if r.Incomplete {
		add("  declaration_incomplete: the declaration has no program; it cannot be reinstalled")
	}
	if f := r.File; f != nil {
		switch {
		case f.Drift:
			add("  unit file %s: drift: %s", f.Path, f.Reason)
		case f.Uncompared:
			add("  unit file %s: not compared: %s", f.Path, f.Reason)
		default:
			add("  unit file %s: as declared", f.Path)
		}
	}
	if r.Sentence != "" {
		add("  %s", r.Sentence)
	}
	if r.LastExit != nil && r.Failed() {
		add("  last exit: %d", *r.LastExit)
	}
	if r.LastStderr != "" {
		add("  last stderr: %s", r.LastStderr)
	}
	if p := r.Protocol; p != nil {
		add("  %s", p.Summary())
	}
	if a := r.Answering; a != nil {
		add("  answering: %s", a.Summary())
		if q := a.Question; q != nil {
			add("    question: %s %s at %s, repair %s", q.Method, q.Path, q.Endpoint, orDash(strings.Join(q.Repair, ", ")))
		}
	}
	return out
}

// RowsTable is `service list` as a table, one row per Row; undeclared
// rows (View.Undeclared) have no service, so their table has no SERVICE
// column.
func RowsTable(rs []Row, undeclared bool) (header []string, rows [][]string) {
	header = []string{"HOST", "SERVICE", "UNIT", "STATE", "PID", "DETAIL"}
	if undeclared {
		header = slices.Delete(header, 1, 2)
	}
	for _, r := range rs {
		row := []string{r.Host, r.Service, r.Unit, r.State, orDashNum(r.PID), r.Detail()}
		if undeclared {
			row = slices.Delete(row, 1, 2)
		}
		rows = append(rows, row)
	}
	return header, rows
}

// HealthTable is `host health` as a table, one row per host: its beacon's
// freshness, age, pass and version, units counted by state, undeclared
// units and the refusals it met.
func HealthTable(hs []HostHealth) (header []string, rows [][]string) {
	for _, h := range hs {
		age, state := "-", "fresh"
		if h.Beacon.At != nil {
			age = fmt.Sprintf("%.0fs", h.Beacon.AgeSeconds)
		}
		if h.Beacon.SkewSeconds > 0 {
			age = fmt.Sprintf("%.0fs ahead", h.Beacon.SkewSeconds) // the host's clock runs ahead
		}
		switch h.Beacon.Kind {
		case FreshnessMissing:
			state = "absent"
		case FreshnessStale, FreshnessUnreadable, FreshnessSkewed:
			state = "stale"
		}
		var refs, counts []string
		for _, r := range h.Refusals {
			refs = append(refs, r.Code)
		}
		for _, k := range slices.Sorted(maps.Keys(h.Counts)) {
			counts = append(counts, fmt.Sprintf("%s=%d", k, h.Counts[k]))
		}
		rows = append(rows, []string{h.Host, state, age, orDashNum(h.Beacon.Pass), orDash(h.StadoVersion),
			orDash(strings.Join(counts, " ")), strconv.Itoa(h.Undeclared), strings.Join(refs, ",")})
	}
	return []string{"HOST", "BEACON", "AGE", "PASS", "VERSION", "UNITS", "UNDECLARED", "REFUSALS"}, rows
}

// FindingsTable is `registry doctor` as a table, one row per finding.
func FindingsTable(fs []Finding) (header []string, rows [][]string) {
	for _, f := range fs {
		rows = append(rows, []string{f.Host, orDash(cmp.Or(f.Service, f.Unit)), f.Code, f.Message})
	}
	return []string{"HOST", "SERVICE", "FINDING", "DETAIL"}, rows
}

// orDash stands for an empty value in text.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// orDashNum is n in text, or "-" for zero.
func orDashNum[N int | int64](n N) string {
	if n == 0 {
		return "-"
	}
	return strconv.FormatInt(int64(n), 10)
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

// Summary says a protocol reading in one line: "protocol: running, ready
// (at ...)", or the operation that could not be read and why.
func (p *Protocol) Summary() string {
	switch p.State {
	case ProtocolPending:
		return "protocol: first reading pending"
	case ProtocolUnreadable:
		return fmt.Sprintf("protocol unreadable: %s: %s", p.Op, p.Cause)
	}
	var words []string
	flag := func(b *bool, yes, no string) {
		if b != nil {
			words = append(words, map[bool]string{true: yes, false: no}[*b])
		}
	}
	flag(p.Running, "running", "not running")
	flag(p.Ready, "ready", "not ready")
	flag(p.Healthy, "healthy", "unhealthy")
	s := "protocol: " + strings.Join(words, ", ")
	if p.At != nil {
		s += " (read " + p.At.UTC().Format(time.RFC3339) + ")"
	}
	return s
}
