package repair

import (
	"context"
	"fmt"
	"runtime"
	"strings"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/register"
	"github.com/wisent/stado/registry"
)

// StepPlan is one repair step of one service on one target, as
// `stado repair` shows it and, applied, runs it: the command resolved for
// the target's OS, with secret-looking environment values masked.
type StepPlan struct {
	Service string            `json:"service"`
	Target  string            `json:"target"`
	Step    string            `json:"step"`
	OS      string            `json:"os"`
	Argv    []string          `json:"argv"`
	Env     map[string]string `json:"env,omitempty"`
	Timeout int               `json:"timeout_seconds"`
	Applied bool              `json:"applied"`
	// Report is what the step did once applied.
	Report *register.StepResult `json:"report,omitempty"`

	inputs map[string]string
	cat    *catalog.Catalog
	target *registry.Target
}

// PlanStep resolves step for service on target from the registry document
// (nil: none yet) and the catalog (nil: the shipped one). It touches no
// host. Errors: a *refusal.Error not_found for a target the document does
// not declare, or a service neither declared there nor in the catalog;
// ResolveStep's errors for the step.
func PlanStep(doc *registry.Document, cat *catalog.Catalog, service, target, step string) (*StepPlan, error) {
	cat = catalog.OrShipped(cat)
	var t *registry.Target
	if doc != nil {
		t, _ = doc.Target(target)
	}
	if t == nil {
		return nil, refusal.New(refusal.NotFound, "the registry declares no target %q", target)
	}
	if _, declared := t.Service(service); !declared {
		_, product := cat.Lookup(service)
		_, recovery := cat.RecoveryEntry(service)
		if !product && !recovery {
			return nil, refusal.New(refusal.NotFound, "%s declares no service %q and the catalog has no such product", target, service)
		}
	}
	goos := t.OS
	if goos == "" {
		goos = runtime.GOOS
	}
	inputs := StepInputs(doc.ServiceResolver.RefreshSeconds)
	cmd, err := ResolveStep(cat, goos, step, inputs)
	if err != nil {
		return nil, err
	}
	return &StepPlan{Service: service, Target: target, Step: step, OS: goos, Argv: cmd.Argv,
		Env: MaskSecrets(cmd.Env), Timeout: cmd.TimeoutSeconds, inputs: inputs, cat: cat, target: t}, nil
}

// Apply runs the planned step on its target through h, the target's
// channel.Host — the path a standing question's repair steps take — and
// keeps the report. A step that did not end well returns a *refusal.Error
// with the report's code.
func (p *StepPlan) Apply(ctx context.Context, h channel.Host) error {
	rep := Reach{Name: p.Target, Host: h, Catalog: p.cat}.Step(ctx, p.Step, p.inputs)
	p.Applied, p.Report = true, &rep
	if rep.OK {
		return nil
	}
	code := rep.Code
	if code == "" {
		code = CodeStepFailed
	}
	return refusal.New(refusal.Code(code), "repair step %s on %s: %s", p.Step, p.Target, rep.Refusal)
}

// secretWords mark a variable whose value must not be printed.
var secretWords = []string{"SECRET", "TOKEN", "PASSWORD", "PASSWD", "PASSPHRASE", "KEY", "CREDENTIAL", "AUTH", "PRIVATE"}

// MaskSecrets returns a copy of env with the values of secret-looking
// names replaced by ********; nil for an empty env.
func MaskSecrets(env map[string]string) map[string]string {
	if len(env) == 0 {
		return nil
	}
	out := make(map[string]string, len(env))
	for k, v := range env {
		out[k] = v
		up := strings.ToUpper(k)
		for _, w := range secretWords {
			if strings.Contains(up, w) {
				out[k] = "********"
				break
			}
		}
	}
	return out
}

// UnknownStepError refuses a step name the repair catalog does not hold.
type UnknownStepError struct{ Step string }

func (e *UnknownStepError) Error() string {
	return fmt.Sprintf("the repair catalog has no step %q", e.Step)
}

// RefusalCode is the stable machine code the CLI reports.
func (e *UnknownStepError) RefusalCode() refusal.Code { return refusal.StepUnknown }

// ResolveStep turns a step name into the command that runs on os, without
// running it. Errors are *catalog.NeedError, *catalog.NoPayloadError or
// *UnknownStepError.
func ResolveStep(c *catalog.Catalog, os, step string, inputs map[string]string) (catalog.Command, error) {
	s, ok := c.Step(step)
	if !ok {
		return catalog.Command{}, &UnknownStepError{Step: step}
	}
	return s.Command(os, inputs)
}
