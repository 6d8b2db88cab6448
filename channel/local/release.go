package local

import (
	"context"
	"fmt"
	"os"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/declaration"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/release"
	"github.com/wisent/stado/release/hostend"
	"github.com/wisent/stado/units"
)

// ReleaseActivate implements channel.Host: the request is checked (product
// and version grammar, mode, scope and unit name, port) before anything is
// read, then hostend.Host.Activate does the activation through this host's
// init system and /proc.
func (h *Host) ReleaseActivate(ctx context.Context, req release.ActivateRequest) (release.ActivateResult, error) {
	if err := h.checkActivate(req); err != nil {
		return release.ActivateResult{Product: req.Product}, err
	}
	rh, closeFn, err := h.releaseHost(ctx)
	if err != nil {
		return release.ActivateResult{Product: req.Product}, err
	}
	defer closeFn()
	if req.Mode == "" {
		req.Mode = channel.ModeApply
	}
	if svc := req.Service; svc != nil && svc.Protocol != nil {
		rh.Serving = h.readyServing(rh.Serving, *svc)
	}
	return rh.Activate(ctx, req)
}

// ReleaseState implements channel.Host: the host's release state file and
// which image each named unit's main process runs. It changes nothing.
func (h *Host) ReleaseState(ctx context.Context, req release.StateRequest) (release.StateResult, error) {
	for product, u := range req.Units {
		if err := release.ValidProduct(product); err != nil {
			return release.StateResult{}, refusal.New(refusal.Validation, "product %q: %v", product, err)
		}
		if err := h.checkUnitOf(u.Scope, u.Unit); err != nil {
			return release.StateResult{}, err
		}
	}
	rh, closeFn, err := h.releaseHost(ctx)
	if err != nil {
		return release.StateResult{}, err
	}
	defer closeFn()
	return rh.State(ctx, req)
}

func (h *Host) checkActivate(req release.ActivateRequest) error {
	switch req.Mode {
	case "", channel.ModeApply, channel.ModePlan:
	default:
		return refusal.New(refusal.InvalidArguments, "mode %q is neither %s nor %s", req.Mode, channel.ModeApply, channel.ModePlan)
	}
	if req.Port < 0 || req.Port > 65535 {
		return refusal.New(refusal.InvalidPort, "port %d is outside 1 to 65535", req.Port)
	}
	if req.Wait < 0 || req.Wait > hostend.MaxWait {
		return refusal.New(refusal.InvalidDuration, "wait %s is outside 0 to %s", req.Wait, hostend.MaxWait)
	}
	if req.Unit == "" && req.Port > 0 {
		return refusal.New(refusal.InvalidArguments, "port %d names no unit to own it", req.Port)
	}
	if req.Unit != "" {
		if err := h.checkUnitOf(req.Scope, req.Unit); err != nil {
			return err
		}
	}
	if s := req.Service; s != nil {
		if s.Unit != req.Unit {
			return refusal.New(refusal.InvalidArguments, "the request's service declares unit %q, not %q", s.Unit, req.Unit)
		}
		if vs := declaration.ValidateService(s, h.OS()); len(vs) > 0 {
			return refusal.New(refusal.InvalidContent, "the request's service: %s", vs[0])
		}
	}
	if err := release.ValidProduct(req.Product); err != nil {
		return refusal.New(refusal.Validation, "product %q: %v", req.Product, err)
	}
	if err := release.ValidVersion(req.Version); err != nil {
		return refusal.New(refusal.Validation, "version %q of %s: %v", req.Version, req.Product, err)
	}
	return nil
}

// checkUnitOf holds a unit to the channel's scopes and to the unit grammar
// of this host's init system.
func (h *Host) checkUnitOf(scope, unit string) error {
	if scope != channel.ScopeSystem && scope != channel.ScopeUser {
		return refusal.New(refusal.InvalidScope, "scope %q is neither system nor user", scope)
	}
	if err := declaration.CheckUnitName(h.OS(), unit); err != nil {
		return refusal.New(refusal.InvalidUnit, "%v", err)
	}
	return nil
}

// releaseHost is the hostend.Host of this machine: what Release gives (the
// release directory, the store, the beacon proof) with this host's init
// system, its executable reader and its serving read.
func (h *Host) releaseHost(ctx context.Context) (*hostend.Host, func(), error) {
	if h.Release == nil {
		return nil, nil, refusal.New(refusal.NoManager, "this host has no release directory wired")
	}
	rh, closeFn, err := h.Release(ctx)
	if err != nil {
		return nil, nil, err
	}
	if closeFn == nil {
		closeFn = func() {}
	}
	rh.GOOS = h.OS()
	rh.Init = hostend.ManagerInit{Open: h.openManager}
	if rh.Exe == nil {
		if h.OS() == registry.OSDarwin {
			rh.Exe = hostend.LaunchctlExe(hostend.LaunchctlPrintOf(units.ExecRunner{}, os.Getuid()))
		} else {
			rh.Exe = hostend.ProcExe(h.procRoot())
		}
	}
	if rh.Serving == nil {
		rh.Serving = h.releaseServing
	}
	if rh.Now == nil {
		rh.Now, rh.After = h.Now, h.After
	}
	return rh, closeFn, nil
}

// releaseServing is the serving read of `service serving` taken on this
// host: whether the unit's processes listen on its directory port at the
// declared address (the host's PortReader, units.PortOwnership). On darwin
// the job's processes are its main pid's tree, so that pid is read first
// (launchctl print in scope's domain). The activation request carries no
// service-protocol declaration, so no ready operation is read here.
func (h *Host) releaseServing(ctx context.Context, scope, unit string, port int, address string) (hostend.ServingReading, error) {
	job := units.Job{Unit: unit}
	if h.OS() == registry.OSDarwin {
		if err := h.withManager(ctx, scope, func(m units.Manager) error {
			v, err := m.Show(ctx, unit)
			job.PID = v.PID
			return err
		}); err != nil {
			return hostend.ServingReading{}, err
		}
	}
	ls, err := h.ports().PortOwners(ctx, port, job)
	if err != nil {
		return hostend.ServingReading{}, err
	}
	state, on := units.PortOwnership(unit, address, ls)
	where := fmt.Sprintf("port %d", port)
	if address != "" {
		where = fmt.Sprintf("%s port %d", address, port)
	}
	switch state {
	case units.PortOwned:
		return hostend.ServingReading{Serving: true, Sentence: fmt.Sprintf("%s owns %s (pid %d, %s)", unit, where, on[0].PID, on[0].Program)}, nil
	case units.PortElsewhere:
		return hostend.ServingReading{Sentence: fmt.Sprintf("%s is held by pid %d (%s), not by %s", where, on[0].PID, on[0].Program, unit)}, nil
	}
	return hostend.ServingReading{Sentence: "nothing listens on " + where}, nil
}

// readyServing is port's serving read plus, for a declaration naming a
// service-protocol executable, its ready operation: owning the port is not
// enough there, as it is not for `service serving`.
func (h *Host) readyServing(port func(ctx context.Context, scope, unit string, p int, address string) (hostend.ServingReading, error), svc registry.Service) func(ctx context.Context, scope, unit string, p int, address string) (hostend.ServingReading, error) {
	return func(ctx context.Context, scope, unit string, p int, address string) (hostend.ServingReading, error) {
		r, err := port(ctx, scope, unit, p, address)
		if err != nil || !r.Serving {
			return r, err
		}
		pr := h.readReady(ctx, h.nodeID(), svc)
		if pr.Ready != nil && *pr.Ready {
			r.Sentence += " and its protocol executable says ready"
			return r, nil
		}
		why := pr.Cause
		if why == "" {
			why = "its ready operation says not ready"
		}
		return hostend.ServingReading{Sentence: r.Sentence + ", but its protocol executable is not ready: " + why}, nil
	}
}
