package fleet

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/units"
)

// The human form of the write half's results: each result says itself in
// lines an operator reads (the CLI prints them; --json prints the result).

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// VerdictLine is a unit's verdict in one line, then the failing sentence
// when it has one.
func VerdictLine(v units.Verdict) []string {
	line := fmt.Sprintf("%s  %s", v.Unit, v.State)
	if v.PID > 0 {
		line += fmt.Sprintf("  pid %d", v.PID)
	}
	if v.Starts > 0 {
		line += fmt.Sprintf("  last exit %d  starts %d", v.LastExit, v.Starts)
	}
	if v.Detail != "" {
		line += "  (" + v.Detail + ")"
	}
	if v.Sentence != "" {
		return []string{line, v.Sentence}
	}
	return []string{line}
}

// Lines of show: each declaration, then the catalog entry.
func (r ShowResult) Lines() []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if len(r.Declarations) == 0 {
		add("%s: declared on no target", r.Name)
	}
	for _, d := range r.Declarations {
		s := d.Service
		add("%s on %s: unit %s, scope %s", s.Name, d.Host, s.Unit, s.EffectiveScope())
		if s.UnitPath != "" {
			add("  unit_path: %s", s.UnitPath)
		}
		switch {
		case d.Incomplete && s.IncompleteReason != "":
			add("  declaration_incomplete: no program, so it cannot be reinstalled (%s)", s.IncompleteReason)
		case d.Incomplete:
			add("  declaration_incomplete: no program, so it cannot be reinstalled")
		default:
			add("  program: %s", s.Program)
			if len(s.Args) > 0 {
				add("  args: %s", registry.Words(s.Args))
			}
		}
		for _, k := range SortedKeys(s.Env) {
			add("  env %s=%s", k, s.Env[k])
		}
		if s.Product != "" {
			add("  product: %s", s.Product)
		}
	}
	if h := r.Host; h != nil {
		out = append(out, h.Lines()...)
	}
	if p := r.Catalog; p != nil {
		add("catalog %s (%s, %s): systemd %s, launchd %s, program %s", p.Name, p.Source, p.Origin,
			orDash(p.Units.Systemd), orDash(p.Units.Launchd), orDash(p.Program))
		if p.Answering != nil {
			add("  answering: %s %s, repair %v", p.Answering.Method, p.Answering.Path, p.Answering.Repair)
		}
	}
	return out
}

// Lines of one host's ensure: what it did, or would do with the diff, or
// why it was refused or failed, with the unit's last lines.
func (r EnsureOutcome) Lines() []string {
	if r.Error != nil {
		out := []string{fmt.Sprintf("%s: %s: %s", r.Host, r.Error.Outcome(), strings.TrimPrefix(r.Error.Message, r.Host+": "))}
		for _, l := range r.Logs {
			out = append(out, "  "+l)
		}
		return out
	}
	if r.DryRun {
		out := []string{fmt.Sprintf("%s: would %s", r.Host, strings.Join(r.Plan, ", then "))}
		if r.Diff != "" {
			out = append(out, strings.Split(strings.TrimSuffix(r.Diff, "\n"), "\n")...)
		}
		return out
	}
	line := fmt.Sprintf("%s: %s %s (%s)", r.Host, r.Unit, r.Install, r.Path)
	if r.Run != channel.RunNone {
		line += ", " + r.Run
	}
	if v := r.Verdict; v != nil {
		line += fmt.Sprintf(", %s pid %d", v.State, v.PID)
	}
	if r.Recorded {
		line += fmt.Sprintf(", declaration recorded at registry revision %d", r.Revision)
	}
	out := []string{line}
	for _, d := range r.SetAside {
		out = append(out, fmt.Sprintf("  %s: the declaration holds it, and it repeated %s", setAsideWords(d), strings.Join(d.Keys, ", ")))
	}
	return out
}

// Lines of one host's restart.
func (r RestartOutcome) Lines() []string {
	switch {
	case r.Error != nil:
		return []string{fmt.Sprintf("%s: %s: %s", r.Host, r.Error.Outcome(), strings.TrimPrefix(r.Error.Message, r.Host+": "))}
	case r.DryRun:
		return []string{fmt.Sprintf("%s: would restart %s", r.Host, r.Unit)}
	}
	return []string{fmt.Sprintf("%s: restarted %s, %s pid %d", r.Host, r.Unit, r.Verdict.State, r.Verdict.PID)}
}

// Lines of adopt.
func (r AdoptResult) Lines() []string {
	verb := "adopted"
	if r.DryRun {
		verb = "would adopt"
	}
	line := fmt.Sprintf("%s: %s %s as %s (%s)", r.Host, verb, r.Unit, r.Service.Name, r.Path)
	if r.Complete {
		line += fmt.Sprintf(", complete: %s %s", r.Service.Program, registry.Words(r.Service.Args))
	} else {
		line += fmt.Sprintf(", declaration_incomplete: %d blocker(s)", max(len(r.Blockers), 1))
	}
	if r.Revision > 0 {
		line += fmt.Sprintf(", registry revision %d", r.Revision)
	}
	out := []string{line}
	for _, b := range r.Blockers {
		out = append(out, "  blocker: "+b.String())
	}
	if !r.Complete && len(r.Blockers) == 0 {
		out = append(out, "  blocker: "+r.Reason)
	}
	if r.ScopeGuess != "" {
		out = append(out, "  scope: "+r.ScopeGuess)
	}
	return out
}

// Lines of retire (retired true) or remove.
func (r WithdrawResult) Lines(retired bool) []string {
	switch {
	case r.DryRun:
		return []string{fmt.Sprintf("%s: would %s", r.Host, strings.Join(r.Plan, ", then "))}
	case retired:
		return append(r.drainLines(), fmt.Sprintf("%s: retired %s (%s): unit stopped and removed from %s, declaration withdrawn at registry revision %d",
			r.Host, r.Service.Name, r.Service.Unit, r.Path, r.Revision))
	}
	return append(r.drainLines(), fmt.Sprintf("%s: declaration %s withdrawn at registry revision %d; the host's unit %s is untouched", r.Host, r.Service.Name, r.Revision, r.Service.Unit))
}

// drainLines say what the drain did, each prefixed with the host.
func (r WithdrawResult) drainLines() []string {
	var out []string
	for _, l := range r.Drain.Lines() {
		out = append(out, r.Host+": "+l)
	}
	return out
}

// Lines of env: KEY=VALUE, sorted, values as masked.
func (r EnvResult) Lines() []string {
	out := []string{}
	for _, k := range SortedKeys(r.Env) {
		out = append(out, k+"="+r.Env[k])
	}
	return out
}

// Lines of a host's truth in show.
func (h HostTruth) Lines() []string {
	out := []string{fmt.Sprintf("on %s, %s as the host holds it:", h.Host, h.Unit)}
	if h.Verdict != nil {
		out = append(out, "  state: "+h.Verdict.State+" "+h.Verdict.Detail)
	}
	if h.File == nil {
		return append(out, "  no unit file")
	}
	out = append(out, "  file: "+h.File.Path)
	for _, d := range h.File.DropIns {
		out = append(out, "  drop-in: "+d.Path)
	}
	if h.Complete {
		out = append(out, "  adopt would now read it complete")
	}
	for _, b := range h.Blockers {
		out = append(out, "  blocker: "+b.String())
	}
	out = append(out, "  --- "+h.File.Path)
	for _, l := range strings.Split(strings.TrimRight(h.File.Content, "\n"), "\n") {
		out = append(out, "  "+l)
	}
	for _, d := range h.File.DropIns {
		out = append(out, "  --- "+d.Path)
		for _, l := range strings.Split(strings.TrimRight(d.Content, "\n"), "\n") {
			out = append(out, "  "+l)
		}
	}
	return out
}

// setAsideWords says how a drop-in was set aside.
func setAsideWords(d channel.SetAsideDropIn) string {
	if d.How == channel.SetAsideMasked {
		return fmt.Sprintf("masked drop-in %s for this unit (%s links to /dev/null)", d.Path, d.To)
	}
	return fmt.Sprintf("set aside drop-in %s as %s", d.Path, filepath.Base(d.To))
}
