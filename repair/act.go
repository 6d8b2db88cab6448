package repair

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/register"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/units"
)

// Refusal codes of step and restart results (the refusal package's, as
// the untyped strings the reports carry).
const (
	CodeStepUnknown     = "repair_step_unknown"
	CodeInputMissing    = "repair_input_missing"
	CodeStepUnsupported = "repair_step_unsupported"
	CodeStepFailed      = "repair_step_failed"
	CodeStepTimeout     = "repair_step_timeout"
	CodeRestartFailed   = "restart_failed"
	CodeNoManager       = "restart_unavailable"
	// CodeUnknownHost refuses a step or restart on a host the registry
	// does not declare.
	CodeUnknownHost = string(refusal.UnknownHost)
)

// Reach is one host as repair acts on it: its name and its channel.Host
// (channel/local's for this machine, the SSH client's for a peer). Repair
// decides which steps and restart a standing service gets; the host runs
// them. Every action is reported, never returned as an error: a refusal or
// a failure to reach the host is the report's code and cause.
type Reach struct {
	// Name is the host's target name, written into every report.
	Name string
	// Host acts on it. When it is nil, Unreachable says why (every action
	// is refused with that error's code).
	Host        channel.Host
	Unreachable error
	// Catalog, when set, narrows each step's inputs to the names the step
	// needs: a host refuses a name its step does not declare.
	Catalog *catalog.Catalog
	// Now is the clock of reports the host did not write; nil means
	// time.Now.
	Now func() time.Time
	// LaunchdDomain is the host's declared launchd domain (a darwin
	// target's launchd_domain), which a user unit is restarted in; ""
	// is gui/<uid> of the login user.
	LaunchdDomain string
}

func (r Reach) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// StepInputs returns the inputs a host hands its repair steps: the refresh
// interval as SKARBIEC_READY_WITHIN_SECONDS when one is declared (>0). A
// step that needs it is refused, naming the variable, when it is absent.
func StepInputs(refreshSeconds int) map[string]string {
	in := map[string]string{}
	if refreshSeconds > 0 {
		in["SKARBIEC_READY_WITHIN_SECONDS"] = fmt.Sprint(refreshSeconds)
	}
	return in
}

// Plan is one recovery: the declared repair steps in order, then the
// restart of the unit.
type Plan struct {
	Host    string
	Service string
	Unit    string
	Scope   string
	Steps   []string
	Inputs  map[string]string
}

// Outcome is what Recover did. Complete holds only when every step and the
// restart ended well.
type Outcome struct {
	Steps    []register.StepResult `json:"repair_steps"`
	Restart  register.Restart      `json:"restart"`
	Complete bool                  `json:"complete"`
}

// RunSteps runs steps in order on the host and returns one report per
// step. A refused step does not stop the next one: each is reported. It is
// the path of `stado repair --apply` and of every recovery.
func (r Reach) RunSteps(ctx context.Context, steps []string, inputs map[string]string) []register.StepResult {
	out := make([]register.StepResult, 0, len(steps))
	for _, s := range steps {
		out = append(out, r.Step(ctx, s, inputs))
	}
	return out
}

// Recover runs the plan's repair steps (RunSteps), then the restart. The
// restart runs even when a step was refused: the steps prepare it, and a
// service left standing serves nobody; the outcome is then not complete
// and the caller retries it.
func (r Reach) Recover(ctx context.Context, p Plan) Outcome {
	o := Outcome{Steps: r.RunSteps(ctx, p.Steps, p.Inputs)}
	o.Restart = r.Restart(ctx, p.Scope, p.Unit)
	o.Complete = o.Restart.OK
	for _, s := range o.Steps {
		o.Complete = o.Complete && s.OK
	}
	return o
}

// Step runs the repair-catalog step named step on the host (the
// repair-step verb) with the inputs it needs. A payload that ran is
// reported as the host reported it; a refusal or an unreachable host is a
// report with its code.
func (r Reach) Step(ctx context.Context, step string, inputs map[string]string) register.StepResult {
	rep := register.StepResult{Step: step, Host: r.Name, At: r.now().UTC()}
	if r.Host == nil {
		rep.Code, rep.Refusal = actionCode(r.Unreachable, "channel_failed"), r.Unreachable.Error()
		return rep
	}
	if r.Catalog != nil {
		if st, ok := r.Catalog.Step(step); ok {
			needed := map[string]string{}
			for _, k := range st.Needs {
				if v, ok := inputs[k]; ok {
					needed[k] = v
				}
			}
			inputs = needed
		}
	}
	req := channel.StepRequest{Step: step}
	keys := make([]string, 0, len(inputs))
	for k := range inputs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		req.Env = append(req.Env, channel.EnvVar{Name: k, Value: inputs[k]})
	}
	start := time.Now()
	res, err := r.Host.RepairStep(ctx, req)
	if err != nil {
		rep.ElapsedMS = time.Since(start).Milliseconds()
		rep.Code, rep.Refusal = actionCode(err, "channel_failed"), err.Error()
		return rep
	}
	res.Host = r.Name
	return res
}

// Restart restarts unit (of scope "system" or "user"; "" is system) on the
// host through the init system's own restart, which clears a failed state
// first (the unit-restart verb). Answer is "done", the init system's job
// result when it refused, or "refused".
func (r Reach) Restart(ctx context.Context, scope, unit string) register.Restart {
	if scope == "" {
		scope = registry.ScopeSystem
	}
	rep := register.Restart{Host: r.Name, Unit: unit, Scope: scope, At: r.now().UTC(), Answer: "refused"}
	if r.Host == nil {
		rep.Code, rep.Refusal = actionCode(r.Unreachable, CodeRestartFailed), r.Unreachable.Error()
		return rep
	}
	start := time.Now()
	u := channel.UnitRef{Scope: scope, Unit: unit}
	if scope == registry.ScopeUser {
		u.Domain = r.LaunchdDomain
	}
	v, err := r.Host.UnitRestart(ctx, u)
	rep.ElapsedMS = time.Since(start).Milliseconds()
	if err != nil {
		rep.Code, rep.Refusal = actionCode(err, CodeRestartFailed), err.Error()
		var je *units.JobError
		if errors.As(err, &je) {
			rep.Answer = je.Result
		}
		return rep
	}
	rep.OK, rep.Answer, rep.PID = true, "done", v.PID
	return rep
}

// actionCode is the stable code of a failed host action: the refusal's own
// code, else the stage a remote call failed at (connect, auth, host_key,
// remote_exit), else otherwise.
func actionCode(err error, otherwise string) string {
	if c, ok := refusal.CodeOf(err); ok {
		return string(c)
	}
	var re *channel.RemoteError
	if errors.As(err, &re) {
		return string(re.Stage)
	}
	return otherwise
}
