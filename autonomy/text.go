package autonomy

import (
	"fmt"
	"strings"
	"time"

	"github.com/wisent/stado/alert"
)

// Headline says a cycle in one line: its mode, when, the registry revision
// and what it planned (and did).
func (c *Cycle) Headline() string {
	s := fmt.Sprintf("cycle %s: %s mode, registry revision %d, %s to %s: %s", c.ID, c.Mode, c.RegistryRevision,
		c.Start.UTC().Format(time.RFC3339), c.End.UTC().Format(time.RFC3339), c.Summary)
	if c.Mode == "enforce" {
		s += fmt.Sprintf("; %d action(s) failed", c.Failed)
	}
	if c.Stopped != "" {
		s += "; stopped: " + c.Stopped
	}
	if c.Error != "" {
		s += "; error: " + c.Error
	}
	return s
}

// Lines say a cycle in full: the headline, its caps and lease holder, and
// the table's rows as lines.
func (c *Cycle) Lines() []string {
	out := []string{c.Headline()}
	if c.Caps != nil {
		out = append(out, fmt.Sprintf("  caps: max-concurrent %d, max-fraction %g, failure-budget %d", c.Caps.MaxConcurrent, c.Caps.MaxFraction, c.Caps.FailureBudget))
	}
	if c.Holder != nil {
		out = append(out, "  lease: "+c.Holder.String())
	}
	if p := c.Phases; p != (Phases{}) {
		l := fmt.Sprintf("  time: store read %.0f ms, host sweep %.0f ms, plan %.0f ms", p.Read, p.Sweep, p.Plan)
		if c.Mode == "enforce" {
			l += fmt.Sprintf(", actions %.0f ms", p.Enforce)
		}
		out = append(out, l)
	}
	for _, a := range c.Alerts {
		var chans []string
		for _, ch := range a.Channels {
			state := "ok"
			switch {
			case ch.OK:
			case ch.Answer == alert.NotRun:
				state = "not run: " + ch.Cause
			default:
				state = "failed: " + ch.Cause
			}
			chans = append(chans, ch.Channel+" "+state)
		}
		out = append(out, fmt.Sprintf("  alert %s %s on %s: %s", a.Event, a.Service, a.Host, strings.Join(chans, ", ")))
	}
	return out
}

// Table is a cycle's rows: host, service, what was planned (the action or
// the refusal code), its detail and, in enforce mode, the result.
func (c *Cycle) Table() (header []string, rows [][]string) {
	header = []string{"HOST", "SERVICE", "PLAN", "DETAIL", "RESULT"}
	for _, r := range c.Rows {
		plan, detail := r.Action, r.Plan
		if r.Refusal != nil {
			plan, detail = "refused: "+string(r.Refusal.Code), r.Refusal.Message
			if r.Action != "" {
				plan = r.Action + ", " + plan
			}
		}
		rows = append(rows, []string{r.Host, r.Service, plan, orDash(detail), resultWord(r.Result)})
	}
	return header, rows
}

func resultWord(res *ActionResult) string {
	switch {
	case res == nil:
		return "-"
	case res.Release != nil:
		return releaseWord(res)
	case res.OK:
		return "ok, verified clean"
	case res.Error != nil:
		return "failed: " + res.Error.Message
	case res.ReverifyError != "":
		return "not verified: " + res.ReverifyError
	case res.Reverify != nil:
		return "not clean: " + res.Reverify.State
	}
	return "failed"
}

// releaseWord is a converge row's result: the host's outcome with the
// versions and pid, or its refusal with the code.
func releaseWord(res *ActionResult) string {
	l := res.Release
	from := l.From
	if from == "" {
		from = "none"
	}
	if res.OK {
		s := "ok, " + l.Outcome + " " + from + " → " + l.To
		if l.Outcome == "unchanged" {
			s = "ok, unchanged, " + l.To + " active"
		}
		if l.PID > 0 {
			s += fmt.Sprintf(", pid %d", l.PID)
		}
		return s
	}
	s := "failed: " + l.Outcome + " " + from + " → " + l.To
	if l.Code != "" {
		s += " [" + l.Code + "]"
	}
	if l.Refusal != "" {
		s += ": " + l.Refusal
	}
	return s
}

// HistoryTable is the newest cycles, one row each.
func HistoryTable(cs []Cycle) (header []string, rows [][]string) {
	header = []string{"CYCLE", "MODE", "START", "END", "REVISION", "SUMMARY"}
	for _, c := range cs {
		sum := c.Summary
		if c.Stopped != "" {
			sum += "; stopped: " + c.Stopped
		}
		if c.Error != "" {
			sum += "; " + c.Error
		}
		rows = append(rows, []string{c.ID, orDash(c.Mode), fmtTime(c.Start), fmtTime(c.End), fmt.Sprint(c.RegistryRevision), orDash(sum)})
	}
	return header, rows
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
