package sshclient

import (
	"context"
	"errors"
	"sync"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/register"
	"github.com/wisent/stado/release"
	"github.com/wisent/stado/units"
)

// recordingHost is a channel.Host that records every call and performs
// none, served behind the in-process SSH server by channel.Serve: the point
// is to see which calls reach the host through the client, and that a
// refusal makes none. It mirrors the recording host of channel's own tests,
// which a test of another package cannot reach.
type recordingHost struct {
	os string

	mu    sync.Mutex
	calls []hostCall
	err   error // returned by every method when set
}

type hostCall struct {
	Method  string
	Scope   string
	Units   []string
	Path    string
	Content string
	Lines   int
	Port    int
	Step    string
	Env     map[string]string
	Domain  string
}

func (h *recordingHost) record(c hostCall) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, c)
	return h.err
}

func (h *recordingHost) Calls() []hostCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hostCall(nil), h.calls...)
}

func (h *recordingHost) OS() string {
	if h.os == "" {
		return "linux"
	}
	return h.os
}

var _ channel.Host = (*recordingHost)(nil)

func (h *recordingHost) Ensure(_ context.Context, req channel.EnsureRequest) (channel.EnsureResult, error) {
	return channel.EnsureResult{Unit: req.Service.Unit, Install: "unchanged", Run: channel.RunNone, Confirmed: true},
		h.record(hostCall{Method: "Ensure", Scope: req.Service.EffectiveScope(), Units: []string{req.Service.Unit}, Path: req.Service.UnitPath, Content: req.Mode})
}
func (h *recordingHost) UnitInstall(_ context.Context, r channel.InstallRequest) (units.InstallResult, error) {
	return units.InstallResult{Action: "installed", Path: r.Path}, h.record(hostCall{Method: "UnitInstall", Scope: r.Scope, Units: []string{r.Unit}, Path: r.Path, Content: string(r.Content)})
}
func (h *recordingHost) UnitRemove(_ context.Context, r channel.RemoveRequest) (channel.RemoveResult, error) {
	return channel.RemoveResult{Unit: r.Unit, Path: r.Path}, h.record(hostCall{Method: "UnitRemove", Scope: r.Scope, Units: []string{r.Unit}, Path: r.Path, Domain: r.Domain})
}
func (h *recordingHost) control(method string, u channel.UnitRef) (units.Verdict, error) {
	return units.Verdict{Unit: u.Unit, State: units.StateActive, PID: 42}, h.record(hostCall{Method: method, Scope: u.Scope, Units: []string{u.Unit}, Domain: u.Domain})
}
func (h *recordingHost) UnitStart(_ context.Context, u channel.UnitRef) (units.Verdict, error) {
	return h.control("UnitStart", u)
}
func (h *recordingHost) UnitStop(_ context.Context, u channel.UnitRef) (units.Verdict, error) {
	return h.control("UnitStop", u)
}
func (h *recordingHost) UnitRestart(_ context.Context, u channel.UnitRef) (units.Verdict, error) {
	return h.control("UnitRestart", u)
}
func (h *recordingHost) UnitShow(_ context.Context, r channel.ShowRequest) (channel.ShowResult, error) {
	res := channel.ShowResult{}
	for _, u := range r.Units {
		res.Units = append(res.Units, units.Verdict{Unit: u, State: units.StateInactive})
	}
	return res, h.record(hostCall{Method: "UnitShow", Scope: r.Scope, Units: r.Units})
}
func (h *recordingHost) UnitFile(_ context.Context, u channel.UnitRef) (channel.FileResult, error) {
	return channel.FileResult{Verdict: units.Verdict{Unit: u.Unit, State: units.StateInactive}}, h.record(hostCall{Method: "UnitFile", Scope: u.Scope, Units: []string{u.Unit}})
}
func (h *recordingHost) UnitLogs(_ context.Context, r channel.LogsRequest) (channel.LogsResult, error) {
	return channel.LogsResult{Unit: r.Unit, Lines: []string{}}, h.record(hostCall{Method: "UnitLogs", Scope: r.Scope, Units: []string{r.Unit}, Lines: r.Lines})
}
func (h *recordingHost) UnitEnv(_ context.Context, u channel.UnitRef) (channel.EnvResult, error) {
	return channel.EnvResult{Unit: u.Unit}, h.record(hostCall{Method: "UnitEnv", Scope: u.Scope, Units: []string{u.Unit}})
}
func (h *recordingHost) UnitList(_ context.Context, scope string) (channel.ListResult, error) {
	return channel.ListResult{Units: []string{}}, h.record(hostCall{Method: "UnitList", Scope: scope})
}
func (h *recordingHost) PortOwner(_ context.Context, port int) (channel.PortOwnerResult, error) {
	return channel.PortOwnerResult{Port: port}, h.record(hostCall{Method: "PortOwner", Port: port})
}
func (h *recordingHost) RepairStep(_ context.Context, r channel.StepRequest) (channel.StepResult, error) {
	env := map[string]string{}
	for _, e := range r.Env {
		env[e.Name] = e.Value
	}
	if len(env) == 0 {
		env = nil
	}
	return channel.StepResult{Step: r.Step, OK: true}, h.record(hostCall{Method: "RepairStep", Step: r.Step, Env: env})
}
func (h *recordingHost) Verify(_ context.Context, r channel.VerifyRequest) (channel.VerifyResult, error) {
	res := channel.VerifyResult{Units: []channel.UnitCheck{}}
	var names []string
	for _, vs := range r.Services {
		names = append(names, vs.Service.Unit)
		res.Units = append(res.Units, channel.UnitCheck{Service: vs.Service.Name, Unit: vs.Service.Unit, Scope: vs.Service.EffectiveScope(), Port: vs.Port})
	}
	return res, h.record(hostCall{Method: "Verify", Units: names})
}
func (h *recordingHost) Recoveries(context.Context) (channel.RecoveriesResult, error) {
	return channel.RecoveriesResult{Recoveries: []register.Recovery{}}, h.record(hostCall{Method: "Recoveries"})
}
func (h *recordingHost) ReleaseActivate(_ context.Context, req release.ActivateRequest) (release.ActivateResult, error) {
	return release.ActivateResult{Product: req.Product, Outcome: release.OutcomeUnchanged}, h.record(hostCall{Method: "ReleaseActivate"})
}
func (h *recordingHost) ReleaseState(context.Context, release.StateRequest) (release.StateResult, error) {
	return release.StateResult{}, h.record(hostCall{Method: "ReleaseState"})
}
func (h *recordingHost) Version(context.Context) (channel.VersionResult, error) {
	return channel.VersionResult{Protocol: channel.ProtocolVersion, OS: h.OS()}, h.record(hostCall{Method: "Version"})
}

var errHostBroken = errors.New("systemd: connection refused")
