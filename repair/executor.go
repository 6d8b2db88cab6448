package repair

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/units"
)

// Refusal codes of step and restart reports.
const (
	CodeStepUnknown     = "repair_step_unknown"
	CodeInputMissing    = "repair_input_missing"
	CodeStepUnsupported = "repair_step_unsupported"
	CodeStepFailed      = "repair_step_failed"
	CodeStepTimeout     = "repair_step_timeout"
	CodeWrongHost       = "wrong_host"
	CodeRestartFailed   = "restart_failed"
	CodeNoManager       = "restart_unavailable"
)

// StepReport is what one repair step did on a host. OK is true only when
// the payload ran and exited 0; otherwise Code and Refusal say why.
type StepReport = channel.StepResult

// RestartReport is what the restart of one unit did. OK is true only when
// the init system finished the restart job; Answer is its own word.
type RestartReport struct {
	Host      string    `json:"host"`
	Unit      string    `json:"unit"`
	Scope     string    `json:"scope"`
	OK        bool      `json:"ok"`
	Answer    string    `json:"answer"`
	PID       int       `json:"pid,omitempty"` // the unit's main pid after the restart, when read
	Code      string    `json:"code,omitempty"`
	Refusal   string    `json:"refusal,omitempty"`
	At        time.Time `json:"at"`
	ElapsedMS int64     `json:"elapsed_ms"`
}

// Executor is how repair steps and restarts reach a host. Local acts on
// this machine; cli wires an SSH executor for other hosts (channel verbs
// repair-step and unit-restart). Both report refusals in the returned
// report, never as a panic, and are safe for concurrent use.
type Executor interface {
	// RunStep runs the repair-catalog step named step on host. inputs are
	// the values the caller hands the step (see StepInputs); only the
	// names the step needs are taken.
	RunStep(ctx context.Context, host, step string, inputs map[string]string) StepReport
	// Restart restarts unit (of scope "system" or "user") on host through
	// the init system's own restart, clearing a failed state first.
	Restart(ctx context.Context, host, scope, unit string) RestartReport
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
	Steps    []StepReport  `json:"repair_steps"`
	Restart  RestartReport `json:"restart"`
	Complete bool          `json:"complete"`
}

// RunSteps runs steps in order on host through ex and returns one report
// per step. A refused step does not stop the next one: each is reported.
// It is the path of `stado repair --apply` and of every recovery.
func RunSteps(ctx context.Context, ex Executor, host string, steps []string, inputs map[string]string) []StepReport {
	out := make([]StepReport, 0, len(steps))
	for _, s := range steps {
		out = append(out, ex.RunStep(ctx, host, s, inputs))
	}
	return out
}

// Recover runs the plan's repair steps (RunSteps), then the restart, through
// ex. The restart runs even when a step was refused: the steps prepare it,
// and a service left standing serves nobody; the outcome is then not
// complete and the caller retries it.
func Recover(ctx context.Context, ex Executor, p Plan) Outcome {
	o := Outcome{Steps: RunSteps(ctx, ex, p.Host, p.Steps, p.Inputs)}
	o.Restart = ex.Restart(ctx, p.Host, p.Scope, p.Unit)
	o.Complete = o.Restart.OK
	for _, s := range o.Steps {
		o.Complete = o.Complete && s.OK
	}
	return o
}

// Local runs steps and restarts on this machine: a step's payload argv
// with os/exec (no shell), its environment and timeout; a restart through
// the units.Manager of the unit's scope.
type Local struct {
	// Catalog resolves step names; nil means catalog.Shipped().
	Catalog *catalog.Catalog
	// Host, when set, is this machine's target name: a report for another
	// host is refused.
	Host string
	// OS selects the payload; "" means runtime.GOOS.
	OS string
	// Managers restart units, by scope ("system", "user"). A scope with no
	// manager is refused.
	Managers map[string]units.Manager
	// UserManager, when set, opens the manager of this host's user-scope
	// units (the systemd user manager or launchd gui/<uid> domain of the
	// user they belong to) for a restart of scope "user" that Managers
	// holds no manager for. Its refusal (user_manager_down, not_found) is
	// the restart's.
	UserManager func(ctx context.Context) (units.Manager, error)
	// Home is HOME for step processes; empty leaves it unset.
	Home string
	// StoreURL, when set, is STADO_STORE for step processes: the store
	// this host process runs on, so stado's own steps (`stado host
	// unlock-store --stale`) act on it rather than on a default.
	StoreURL string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

var _ Executor = (*Local)(nil)

func (l *Local) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

func (l *Local) os() string {
	if l.OS != "" {
		return l.OS
	}
	return runtime.GOOS
}

func (l *Local) cat() *catalog.Catalog { return catalog.OrShipped(l.Catalog) }

// Command resolves a step for this machine without running it: the argv,
// environment and timeout RunStep would use. Errors are *catalog.NeedError,
// *catalog.NoPayloadError or *UnknownStepError.
func (l *Local) Command(step string, inputs map[string]string) (catalog.Command, error) {
	return ResolveStep(l.cat(), l.os(), step, inputs)
}

// UnknownStepError refuses a step name the repair catalog does not hold.
type UnknownStepError struct{ Step string }

func (e *UnknownStepError) Error() string {
	return fmt.Sprintf("the repair catalog has no step %q", e.Step)
}

// RefusalCode is the stable machine code the CLI reports.
func (e *UnknownStepError) RefusalCode() refusal.Code { return CodeStepUnknown }

// ResolveStep turns a step name into the command that runs on os.
func ResolveStep(c *catalog.Catalog, os, step string, inputs map[string]string) (catalog.Command, error) {
	s, ok := c.Step(step)
	if !ok {
		return catalog.Command{}, &UnknownStepError{Step: step}
	}
	return s.Command(os, inputs)
}

// RunStep implements Executor.
func (l *Local) RunStep(ctx context.Context, host, step string, inputs map[string]string) StepReport {
	r := StepReport{Step: step, Host: host, At: l.now().UTC()}
	if l.Host != "" && host != l.Host {
		r.Code, r.Refusal = CodeWrongHost, fmt.Sprintf("this machine is %s, not %s", l.Host, host)
		return r
	}
	cmd, err := l.Command(step, inputs)
	if err != nil {
		r.Code, r.Refusal = codeOf(err), err.Error()
		return r
	}
	r.Argv = cmd.Argv
	ctx, cancel := context.WithTimeout(ctx, cmd.Timeout)
	defer cancel()
	c := exec.CommandContext(ctx, cmd.Argv[0], cmd.Argv[1:]...)
	c.Env = stepEnv(l.os(), cmd.Env)
	if l.Home != "" {
		c.Env = append(c.Env, "HOME="+l.Home)
	}
	if l.StoreURL != "" {
		c.Env = append(c.Env, "STADO_STORE="+l.StoreURL)
	}
	c.Dir = "/"
	c.WaitDelay = 2 * time.Second
	var out tailBuffer
	c.Stdout, c.Stderr = &out, &out
	start := time.Now()
	err = c.Run()
	r.ElapsedMS = time.Since(start).Milliseconds()
	r.Output = out.String()
	var ee *exec.ExitError
	switch {
	case err == nil:
		r.OK = true
		zero := 0
		r.ExitCode = &zero
	case ctx.Err() == context.DeadlineExceeded:
		r.Code, r.Refusal = CodeStepTimeout, fmt.Sprintf("%s did not end within %ds", cmd.Argv[0], cmd.TimeoutSeconds)
	case errors.As(err, &ee):
		code := ee.ExitCode()
		r.ExitCode = &code
		r.Code, r.Refusal = CodeStepFailed, fmt.Sprintf("%s exited %d", strings.Join(cmd.Argv, " "), code)
		if last := lastLine(r.Output); last != "" {
			r.Refusal += ": " + last
		}
	default:
		r.Code, r.Refusal = CodeStepFailed, fmt.Sprintf("run %s: %v", cmd.Argv[0], err)
	}
	return r
}

// stepEnv is the whole environment of a step process: the declared PATH
// (the one rendered units carry), then the step's own variables, sorted.
func stepEnv(os string, env map[string]string) []string {
	out := []string{"PATH=" + units.FixedPath(os)}
	keys := make([]string, 0, len(env))
	for k := range env {
		if k != "PATH" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if v, ok := env["PATH"]; ok {
		out[0] = "PATH=" + v
	}
	for _, k := range keys {
		out = append(out, k+"="+env[k])
	}
	return out
}

// Restart implements Executor.
func (l *Local) Restart(ctx context.Context, host, scope, unit string) RestartReport {
	if scope == "" {
		scope = registry.ScopeSystem
	}
	r := RestartReport{Host: host, Unit: unit, Scope: scope, At: l.now().UTC()}
	if l.Host != "" && host != l.Host {
		r.Code, r.Refusal = CodeWrongHost, fmt.Sprintf("this machine is %s, not %s", l.Host, host)
		r.Answer = "refused"
		return r
	}
	m := l.Managers[scope]
	if m == nil && scope == registry.ScopeUser && l.UserManager != nil {
		um, err := l.UserManager(ctx)
		if err != nil {
			r.Code, r.Refusal, r.Answer = codeOf(err), err.Error(), "refused"
			if r.Code == "" {
				r.Code = CodeRestartFailed
			}
			return r
		}
		m = um
	}
	if m == nil {
		r.Code, r.Refusal, r.Answer = CodeNoManager, fmt.Sprintf("no %s service manager to restart %s with", scope, unit), "refused"
		return r
	}
	start := time.Now()
	err := m.Restart(ctx, unit)
	r.ElapsedMS = time.Since(start).Milliseconds()
	if err != nil {
		r.Code, r.Refusal, r.Answer = codeOf(err), err.Error(), "refused"
		if r.Code == "" {
			r.Code = CodeRestartFailed
		}
		var je *units.JobError
		if errors.As(err, &je) {
			r.Answer = je.Result
		}
		return r
	}
	r.OK, r.Answer = true, "done"
	if v, err := m.Show(ctx, unit); err == nil {
		r.PID = v.PID
	}
	return r
}

func codeOf(err error) string {
	var coded refusal.Coded
	if errors.As(err, &coded) {
		return string(coded.RefusalCode())
	}
	return ""
}

// tailBuffer keeps the last tailMax bytes written to it.
type tailBuffer struct{ b []byte }

const tailMax = 2048

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > tailMax {
		t.b = slices.Clone(t.b[len(t.b)-tailMax:])
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return strings.ToValidUTF8(string(bytes.TrimSpace(t.b)), "?") }

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
