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
	"github.com/wisent/stado/registry"
)

// CodeUnknownHost refuses a step or restart on a host the registry does not
// declare.
const CodeUnknownHost = string(refusal.UnknownHost)

// Remote runs steps and restarts on another host over its registry SSH
// channel: the repair-step verb runs the step's fixed payload there, the
// unit-restart verb the init system's own restart. Neither needs a stado
// host process on that host, only its channel program.
type Remote struct {
	Pool *channel.Pool
	// Target resolves a host name to its registry target.
	Target func(host string) (registry.Target, bool)
	// Catalog, when set, narrows each step's inputs to the names the step
	// needs: the host channel refuses a name a step does not declare.
	Catalog *catalog.Catalog
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

var _ Executor = (*Remote)(nil)

// TargetsOf resolves hosts through doc.
func TargetsOf(doc *registry.Document) func(string) (registry.Target, bool) {
	return func(host string) (registry.Target, bool) {
		if doc == nil {
			return registry.Target{}, false
		}
		t, ok := doc.Target(host)
		if !ok {
			return registry.Target{}, false
		}
		return *t, true
	}
}

func (r *Remote) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// RunStep implements Executor over the repair-step verb.
func (r *Remote) RunStep(ctx context.Context, host, step string, inputs map[string]string) StepReport {
	rep := StepReport{Step: step, Host: host, At: r.now().UTC()}
	t, ok := r.Target(host)
	if !ok {
		rep.Code, rep.Refusal = string(refusal.UnknownHost), fmt.Sprintf("the registry declares no target %q", host)
		return rep
	}
	req := channel.StepRequest{Step: step}
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
	keys := make([]string, 0, len(inputs))
	for k := range inputs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		req.Env = append(req.Env, channel.EnvVar{Name: k, Value: inputs[k]})
	}
	start := time.Now()
	remote, err := r.host(t).RepairStep(ctx, req)
	if err != nil {
		rep.ElapsedMS = time.Since(start).Milliseconds()
		rep.Code, rep.Refusal = remoteCode(err), err.Error()
		return rep
	}
	remote.Host = host
	return remote
}

func (r *Remote) host(t registry.Target) channel.Host { return r.Pool.Connect()(t) }

// Restart implements Executor over the unit-restart verb.
func (r *Remote) Restart(ctx context.Context, host, scope, unit string) RestartReport {
	if scope == "" {
		scope = registry.ScopeSystem
	}
	rep := RestartReport{Host: host, Unit: unit, Scope: scope, At: r.now().UTC(), Answer: "refused"}
	t, ok := r.Target(host)
	if !ok {
		rep.Code, rep.Refusal = string(refusal.UnknownHost), fmt.Sprintf("the registry declares no target %q", host)
		return rep
	}
	start := time.Now()
	v, err := r.host(t).UnitRestart(ctx, channel.UnitRef{Scope: scope, Unit: unit})
	rep.ElapsedMS = time.Since(start).Milliseconds()
	if err != nil {
		rep.Code, rep.Refusal = remoteCode(err), err.Error()
		if rep.Code == "" {
			rep.Code = CodeRestartFailed
		}
		return rep
	}
	rep.OK, rep.Answer, rep.PID = true, "done", v.PID
	return rep
}

// remoteCode is the stable code of a channel failure: the refusal's own
// code, else the stage (connect, auth, host_key, remote_exit).
func remoteCode(err error) string {
	if c, ok := refusal.CodeOf(err); ok {
		return string(c)
	}
	var re *channel.RemoteError
	if errors.As(err, &re) {
		return string(re.Stage)
	}
	return "channel_failed"
}
