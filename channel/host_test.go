package channel

import (
	"context"
	"errors"
	"github.com/wisent/stado/refusal"
	"sync"
)

// recordingHost is a Host that records every call and performs none: the
// real Host is the units Manager, which the lead wires in; here the point is
// to see which calls the dispatcher makes, and that a refusal makes none.
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
}

func (h *recordingHost) record(c hostCall) (any, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, c)
	if h.err != nil {
		return nil, h.err
	}
	return map[string]any{"method": c.Method}, nil
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

func (h *recordingHost) UnitInstall(_ context.Context, scope, unit, path string, content []byte) (any, error) {
	return h.record(hostCall{Method: "UnitInstall", Scope: scope, Units: []string{unit}, Path: path, Content: string(content)})
}
func (h *recordingHost) UnitRemove(_ context.Context, scope, unit, path string) (any, error) {
	return h.record(hostCall{Method: "UnitRemove", Scope: scope, Units: []string{unit}, Path: path})
}
func (h *recordingHost) UnitStart(_ context.Context, scope, unit string) (any, error) {
	return h.record(hostCall{Method: "UnitStart", Scope: scope, Units: []string{unit}})
}
func (h *recordingHost) UnitStop(_ context.Context, scope, unit string) (any, error) {
	return h.record(hostCall{Method: "UnitStop", Scope: scope, Units: []string{unit}})
}
func (h *recordingHost) UnitRestart(_ context.Context, scope, unit string) (any, error) {
	return h.record(hostCall{Method: "UnitRestart", Scope: scope, Units: []string{unit}})
}
func (h *recordingHost) UnitShow(_ context.Context, scope string, units []string) (any, error) {
	return h.record(hostCall{Method: "UnitShow", Scope: scope, Units: units})
}
func (h *recordingHost) UnitLogs(_ context.Context, scope, unit string, lines int) (any, error) {
	return h.record(hostCall{Method: "UnitLogs", Scope: scope, Units: []string{unit}, Lines: lines})
}
func (h *recordingHost) UnitEnv(_ context.Context, scope, unit string) (any, error) {
	return h.record(hostCall{Method: "UnitEnv", Scope: scope, Units: []string{unit}})
}
func (h *recordingHost) UnitList(_ context.Context, scope string) (any, error) {
	return h.record(hostCall{Method: "UnitList", Scope: scope})
}
func (h *recordingHost) PortOwner(_ context.Context, port int) (any, error) {
	return h.record(hostCall{Method: "PortOwner", Port: port})
}
func (h *recordingHost) RepairStep(_ context.Context, step string, env map[string]string) (any, error) {
	return h.record(hostCall{Method: "RepairStep", Step: step, Env: env})
}
func (h *recordingHost) Version(context.Context) (any, error) {
	return h.record(hostCall{Method: "Version"})
}

// notLoaded is a host error that is a refusal, as "unit not loaded" is.
type notLoaded struct{ unit string }

func (e notLoaded) Error() string             { return "unit " + e.unit + " is not loaded" }
func (e notLoaded) RefusalCode() refusal.Code { return refusal.NotFound }

var errHostBroken = errors.New("systemd: connection refused")
