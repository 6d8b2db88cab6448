package rollout

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/wisent/stado/release"
)

// Text is the line as a converge prints it as it lands.
func (l Line) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: ", l.Host, l.Product)
	if l.Canary {
		b.WriteString("(canary) ")
	}
	switch l.Outcome {
	case release.OutcomeUnchanged:
		fmt.Fprintf(&b, "unchanged, %s active", l.To)
	case release.OutcomeWouldActivate:
		fmt.Fprintf(&b, "would activate %s, now %s", l.To, orNone(l.From))
	case OutcomeNotAttempted:
		fmt.Fprintf(&b, "not attempted (%s declared): an earlier host failed", l.To)
	case release.OutcomeActivated, release.OutcomeInstalled:
		fmt.Fprintf(&b, "%s %s → %s", l.Outcome, orNone(l.From), l.To)
		if l.PID > 0 {
			fmt.Fprintf(&b, ", pid %d", l.PID)
		}
		if l.Evidence != "" {
			fmt.Fprintf(&b, " (%s)", l.Evidence)
		}
	default:
		if l.From == "" {
			fmt.Fprintf(&b, "%s %s", l.Outcome, l.To) // the host said nothing of what it had
		} else {
			fmt.Fprintf(&b, "%s %s → %s", l.Outcome, l.From, l.To)
		}
		if l.Code != "" {
			fmt.Fprintf(&b, " [%s]", l.Code)
		}
		if l.Refusal != "" {
			b.WriteString(": " + l.Refusal)
		}
		if l.Evidence != "" {
			fmt.Fprintf(&b, "; %s, pid %d", l.Evidence, l.PID)
		}
	}
	return b.String()
}

// Summary is the report's last text line: what converged and what did not.
func (r Report) Summary() string {
	counts := map[string]int{}
	var order []string
	for _, l := range r.Lines {
		if counts[l.Outcome] == 0 {
			order = append(order, l.Outcome)
		}
		counts[l.Outcome]++
	}
	if len(order) == 0 {
		return "nothing to converge: the registry declares no release version for the selected hosts"
	}
	parts := make([]string, 0, len(order))
	for _, o := range order {
		parts = append(parts, fmt.Sprintf("%d %s", counts[o], o))
	}
	s := r.Mode + ": " + strings.Join(parts, ", ")
	if r.Failed != "" {
		s += "; stopped at " + r.Failed
	}
	return s
}

// Table is the show's rows as a table: its header and cells. The running
// column is filled by ShowHost, the beacon column by ShowFleet.
func Table(rows []Row, now time.Time) ([]string, [][]string) {
	header := []string{"HOST", "PRODUCT", "DECLARED", "ACTIVE", "SHA256", "BACKUP", "STATUS", "RUNNING", "BEACON", "LAST"}
	cells := make([][]string, 0, len(rows))
	for _, r := range rows {
		declared := orDash(r.Declared)
		if r.Pinned {
			declared += " (pin)"
		}
		active, sha, backup := "-", "-", "-"
		if r.Active != nil {
			active, sha = r.Active.Version, short(r.Active.SHA256)
		}
		if r.Backup != nil {
			backup = r.Backup.Version
		}
		status := r.Status
		if r.Unknown != "" {
			status += ": " + r.Unknown
		}
		running := "-"
		if r.OnActive != nil {
			running = "pid " + strconv.Itoa(r.PID) + " on active"
			if !*r.OnActive {
				running = "pid " + strconv.Itoa(r.PID) + " NOT on active"
				if r.PID == 0 {
					running = "no process"
				}
			}
		}
		bcn := "-"
		if r.Beacon != nil {
			bcn = r.Beacon.Kind.String()
			if r.Beacon.At != nil {
				bcn += " " + now.Sub(*r.Beacon.At).Round(time.Second).String()
			}
		}
		last := "-"
		if a := r.Last; a != nil {
			last = a.Outcome + " " + a.Version + " " + a.At.UTC().Format(time.RFC3339)
			if a.Refusal != "" {
				last += ": " + a.Refusal
			}
		}
		cells = append(cells, []string{r.Host, r.Product, declared, active, sha, backup, status, running, bcn, last})
	}
	return header, cells
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return orDash(sha)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
