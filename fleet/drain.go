package fleet

import (
	"context"
	"fmt"
	"strings"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
)

// Drain states of a withdrawal (WithdrawResult.Drain).
const (
	DrainDrained  = "drained"   // the step ran and exited 0
	DrainFailed   = "failed"    // the step ran and failed, or the host refused it: the unit was not stopped
	DrainSkipped  = "skipped"   // --no-drain: the unit is stopped without it
	DrainWouldRun = "would_run" // --dry-run: the step would run first
)

// NoDrainFlag is how the output names a skipped drain.
const NoDrainFlag = "--no-drain"

// Drain is what a product's drain step did (or would do) before retire or
// remove stopped its unit: the step the catalog names for the product
// (catalog.Product.Drain), run on the host through the channel's repair-step
// verb, and its result as the host returned it.
type Drain struct {
	Product string              `json:"product"`
	Step    string              `json:"step"`
	State   string              `json:"state"`
	Result  *channel.StepResult `json:"result,omitempty"`
	Env     []channel.EnvVar    `json:"-"`               // values of the names the step needs; not reported
	Cause   string              `json:"cause,omitempty"` // the host's refusal, when it refused the step
}

// drainFor returns the drain step of the product s names and the values of
// the names the step needs: each from the declaration's env, else the
// product's default. Nil when the product declares no drain step.
func drainFor(cat *catalog.Catalog, s registry.Service) *Drain {
	if cat == nil || s.Product == "" {
		return nil
	}
	p, ok := cat.Lookup(s.Product)
	if !ok || p.Drain == "" {
		return nil
	}
	d := &Drain{Product: p.Name, Step: p.Drain}
	if st, ok := cat.Step(p.Drain); ok {
		defaults := p.EnvDefaults()
		for _, name := range st.Needs {
			v, set := s.Env[name]
			if !set || v == "" {
				v = defaults[name]
			}
			if v != "" {
				d.Env = append(d.Env, channel.EnvVar{Name: name, Value: v})
			}
		}
	}
	return d
}

// planDrain records in res what the drain does for s: nothing for a
// product without a drain step, skipped under --no-drain, would_run under
// --dry-run. It returns the drain to run now, or nil.
func planDrain(cat *catalog.Catalog, s registry.Service, o WithdrawOptions, res *WithdrawResult) *Drain {
	d := drainFor(cat, s)
	if d == nil {
		return nil
	}
	res.Drain = d
	switch {
	case o.NoDrain:
		d.State = DrainSkipped
		res.Plan = append(res.Plan, "drain skipped: "+NoDrainFlag)
		return nil
	case o.DryRun:
		d.State = DrainWouldRun
	}
	res.Plan = append(res.Plan, fmt.Sprintf("drain step %s (asks %s to stop what it runs)", d.Step, d.Product))
	if o.DryRun {
		return nil
	}
	return d
}

// runDrain runs d on h. A step that fails, or that the host refuses, is a
// drain_failed refusal naming the step and its output: the caller stops
// nothing. A transport failure is returned as it is.
func runDrain(ctx context.Context, h channel.Host, host string, d *Drain) error {
	rep, err := h.RepairStep(ctx, channel.StepRequest{Step: d.Step, Env: d.Env})
	if err != nil {
		if _, coded := refusal.CodeOf(err); !coded {
			return err
		}
		d.State, d.Cause = DrainFailed, err.Error()
		return &refusal.Error{Code: refusal.DrainFailed, Err: err,
			Message: fmt.Sprintf("drain step %s of %s on %s was refused: %v; the unit was not stopped", d.Step, d.Product, host, err),
			Hint:    NoDrainFlag + " stops the unit without draining it"}
	}
	if rep.Host == "" {
		rep.Host = host
	}
	d.Result = &rep
	if !rep.OK {
		d.State = DrainFailed
		return &refusal.Error{Code: refusal.DrainFailed, Details: rep,
			Message: fmt.Sprintf("drain step %s of %s on %s failed%s: %s; the unit was not stopped", d.Step, d.Product, host, exitWords(rep), lastLine(rep.Output, rep.Refusal)),
			Hint:    NoDrainFlag + " stops the unit without draining it"}
	}
	d.State = DrainDrained
	return nil
}

func exitWords(rep channel.StepResult) string {
	switch {
	case rep.ExitCode != nil:
		return fmt.Sprintf(" (exit %d)", *rep.ExitCode)
	case rep.Code != "":
		return " (" + rep.Code + ")"
	}
	return ""
}

// lastLine is the last non-empty line of out, else alt.
func lastLine(out, alt string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
		return l
	}
	if alt != "" {
		return alt
	}
	return "no output"
}

// reasonWithDrain adds the drain's outcome to the reason a withdrawal
// records with its registry revision.
func reasonWithDrain(reason string, d *Drain) string {
	if d == nil {
		return reason
	}
	if d.State == DrainSkipped {
		return reason + " (drain skipped: " + NoDrainFlag + ")"
	}
	return fmt.Sprintf("%s (drain step %s: %s)", reason, d.Step, d.State)
}

// Lines says what the drain did, one line.
func (d *Drain) Lines() []string {
	if d == nil {
		return nil
	}
	switch d.State {
	case DrainSkipped:
		return []string{"drain skipped: " + NoDrainFlag}
	case DrainWouldRun:
		return nil // the plan says it
	case DrainDrained:
		out := "drained by step " + d.Step
		if d.Result != nil {
			out += fmt.Sprintf(" in %dms", d.Result.ElapsedMS)
			if l := lastLine(d.Result.Output, ""); l != "no output" {
				out += ": " + l
			}
		}
		return []string{out}
	}
	return []string{"drain step " + d.Step + " failed; the unit was not stopped"}
}
