package local

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/units"
)

// StepRunner runs repair steps on this machine: a step's payload argv with
// os/exec (no shell) from /, its declared environment under the fixed PATH
// rendered units carry, and its timeout. It is the one step runner: the
// host channel's repair-step verb, a host's own recovery and `stado repair
// --apply` all reach it through Host.RepairStep. Safe for concurrent use.
type StepRunner struct {
	// OS selects the payload; "" means runtime.GOOS.
	OS string
	// Home is HOME for step processes; empty leaves it unset.
	Home string
	// StoreURL, when set, is STADO_STORE for step processes: the store
	// this host process runs on, so stado's own steps (`stado host
	// unlock-store --stale`) act on it rather than on a default.
	StoreURL string
	// Now is the clock of the result's At; nil means time.Now.
	Now func() time.Time
}

// Run runs the step of cat named step with env (the names it needs) and
// says what it did; it is the signature of Host.RunStep. A payload that
// exits 0 is OK. One that could not start, exited nonzero or overran its
// timeout is reported (repair_step_failed or repair_step_timeout) with its
// exit status and the tail of its output; a step that cannot be resolved
// for this OS is reported with its refusal code and nothing runs.
func (r *StepRunner) Run(ctx context.Context, cat *catalog.Catalog, step string, env map[string]string) channel.StepResult {
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	res := channel.StepResult{Step: step, At: now().UTC()}
	st, ok := catalog.OrShipped(cat).Step(step)
	if !ok {
		res.Code, res.Refusal = string(refusal.StepUnknown), fmt.Sprintf("the repair catalog has no step %q", step)
		return res
	}
	cmd, err := st.Command(r.os(), env)
	if err != nil {
		res.Code, res.Refusal = codeOf(err), err.Error()
		return res
	}
	res.Argv = cmd.Argv
	ctx, cancel := context.WithTimeout(ctx, cmd.Timeout)
	defer cancel()
	c := exec.CommandContext(ctx, cmd.Argv[0], cmd.Argv[1:]...)
	c.Env = stepEnv(r.os(), cmd.Env)
	if r.Home != "" {
		c.Env = append(c.Env, "HOME="+r.Home)
	}
	if r.StoreURL != "" {
		c.Env = append(c.Env, "STADO_STORE="+r.StoreURL)
	}
	c.Dir = "/"
	c.WaitDelay = 2 * time.Second
	var out units.Tail
	c.Stdout, c.Stderr = &out, &out
	start := time.Now()
	err = c.Run()
	res.ElapsedMS = time.Since(start).Milliseconds()
	res.Output = out.String()
	var ee *exec.ExitError
	switch {
	case err == nil:
		res.OK = true
		zero := 0
		res.ExitCode = &zero
	case ctx.Err() == context.DeadlineExceeded:
		res.Code, res.Refusal = string(refusal.StepTimeout), fmt.Sprintf("%s did not end within %ds", cmd.Argv[0], cmd.TimeoutSeconds)
	case errors.As(err, &ee):
		code := ee.ExitCode()
		res.ExitCode = &code
		res.Code, res.Refusal = string(refusal.StepFailed), fmt.Sprintf("%s exited %d", strings.Join(cmd.Argv, " "), code)
		if last := units.LastLine(res.Output); last != "" {
			res.Refusal += ": " + last
		}
	default:
		res.Code, res.Refusal = string(refusal.StepFailed), fmt.Sprintf("run %s: %v", cmd.Argv[0], err)
	}
	return res
}

func (r *StepRunner) os() string {
	if r.OS != "" {
		return r.OS
	}
	return runtime.GOOS
}

// stepEnv is the whole environment of a step process: the declared PATH
// (the one rendered units carry), then the step's own variables, sorted.
func stepEnv(goos string, env map[string]string) []string {
	out := []string{"PATH=" + units.FixedPath(goos)}
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

func codeOf(err error) string {
	if c, ok := refusal.CodeOf(err); ok {
		return string(c)
	}
	return ""
}
