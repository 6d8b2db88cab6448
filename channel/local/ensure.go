package local

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"time"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/units"
)

// Ensure makes one declaration true on this host in one call: render it
// here (this host knows its home), install the file only when its bytes
// differ (reload and enable come with a changed file only), start a stopped
// unit or restart a running one whose file changed, then read the unit
// through the init system until its own main process has held its pid for
// the settle time. An unchanged file under a running unit changes nothing.
// A unit that does not hold is a result with Confirmed false, its verdict
// and its last log lines — evidence, not an error. Plan mode reads the
// same and changes nothing, with the file's diff.
func (h *Host) Ensure(ctx context.Context, req channel.EnsureRequest) (channel.EnsureResult, error) {
	s := h.withProductSettings(ctx, req.Service)
	res := channel.EnsureResult{Unit: s.Unit}
	if req.OS != "" && req.OS != h.OS() {
		return res, refusal.New(refusal.OSMismatch, "the registry says this host runs %s, and it runs %s", req.OS, h.OS())
	}
	if err := h.checkDomain(req.LaunchdDomain); err != nil {
		return res, err
	}
	if s.Incomplete() {
		return res, &units.IncompleteError{Service: s.Name, Unit: s.Unit, Reason: s.IncompleteReason}
	}
	content, err := units.Render(s, h.OS(), h.Home)
	if err != nil {
		return res, &refusal.Error{Code: refusal.Validation, Message: "render " + s.Unit + ": " + err.Error(), Err: err}
	}
	u := channel.UnitRef{Scope: s.EffectiveScope(), Unit: s.Unit}
	res.Path = units.UnitPath(s, h.OS(), h.Home)
	if err := h.checkPath(u, res.Path); err != nil {
		return res, err
	}
	s.UnitPath = res.Path
	// A product's unit keeps the installed fields its rendering does not
	// declare, such as an operator's resource limits (units.KeepInstalled).
	content = units.KeepInstalledAt(s, h.OS(), res.Path, content)
	err = h.withDomainManager(ctx, u.Scope, req.LaunchdDomain, func(m units.Manager) error {
		// Drop-ins that would repeat the file's commands are decided on
		// before anything is written (dropins.go).
		aside, loaded, err := h.dropInsToSetAside(ctx, m, s, content)
		if err != nil {
			return err
		}
		res.SetAside = aside
		if req.Mode == channel.ModePlan {
			return h.plan(ctx, m, s, content, &res)
		}
		return h.apply(ctx, m, s, content, req, loaded, &res)
	})
	if err == nil && req.Mode == channel.ModeApply && res.Confirmed && req.Serving != nil {
		// The serving read the write half would make next, in this call.
		// A reading that cannot be taken is left out: the caller reads
		// again itself.
		vr, verr := h.Verify(ctx, channel.VerifyRequest{OS: req.OS, LaunchdDomain: req.LaunchdDomain, Services: []channel.VerifyService{
			{Service: req.Service, Port: req.Serving.Port, Address: req.Serving.Address}}})
		if verr == nil && len(vr.Units) == 1 {
			res.Serving = &vr.Units[0]
		}
	}
	return res, err
}

// withProductSettings is s with the unit settings of the product it names
// merged under its own, from this host's catalog (the site's when Catalog
// loads one; units.Render merges the shipped product's in any case). A
// catalog that cannot be loaded leaves the shipped settings to Render.
func (h *Host) withProductSettings(ctx context.Context, s registry.Service) registry.Service {
	if s.Product == "" || h.Catalog == nil {
		return s
	}
	cat, err := h.Catalog(ctx)
	if err != nil || cat == nil {
		return s
	}
	return cat.WithProductSettings(s, h.OS())
}

// plan says what apply would do.
func (h *Host) plan(ctx context.Context, m units.Manager, s registry.Service, content []byte, res *channel.EnsureResult) error {
	v, err := m.Show(ctx, s.Unit)
	if err != nil {
		return err
	}
	res.Verdict = v
	old, err := os.ReadFile(res.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		res.Install, old = units.ActionInstalled, nil
	case err != nil:
		return err
	case string(old) == string(content):
		res.Install = units.ActionUnchanged
	default:
		res.Install = units.ActionUpdated
	}
	res.Diff = units.Diff(res.Path, string(old), string(content))
	res.Run = runAction(res.Install, len(res.SetAside) > 0, v)
	res.Confirmed = res.Run == channel.RunNone
	return nil
}

// runAction is what a unit needs after its file was installed with action
// and, when setAside, drop-ins of it were set aside.
func runAction(install string, setAside bool, v units.Verdict) string {
	switch {
	case install == units.ActionUnchanged && !setAside && running(v):
		return channel.RunNone
	case v.State == units.StateActive:
		return channel.RunRestarted
	default:
		return channel.RunStarted
	}
}

func running(v units.Verdict) bool { return v.State == units.StateActive && v.PID > 0 }

func (h *Host) apply(ctx context.Context, m units.Manager, s registry.Service, content []byte, req channel.EnsureRequest, loaded bool, res *channel.EnsureResult) error {
	inst, err := m.Install(ctx, s, content)
	if err != nil {
		return err
	}
	res.Install = inst.Action
	if !loaded && inst.Action == units.ActionInstalled {
		// systemd reported no drop-ins for a unit it held no file for: now
		// that it holds one, a waiting drop-in directory applies. A refusal
		// takes the new file away again, which is all this ensure wrote.
		aside, _, err := h.dropInsToSetAside(ctx, m, s, content)
		if err != nil {
			if rerr := m.Remove(ctx, s); rerr != nil {
				return errors.Join(err, rerr)
			}
			res.Install = ""
			return err
		}
		res.SetAside = aside
	}
	if len(res.SetAside) > 0 {
		done, err := setAside(res.SetAside)
		res.SetAside = done
		if err != nil {
			return err
		}
		if r, ok := m.(units.Reloader); ok {
			if err := r.Reload(ctx); err != nil {
				return err
			}
		}
	}
	before, err := m.Show(ctx, s.Unit)
	if err != nil {
		return err
	}
	res.Run = runAction(inst.Action, len(res.SetAside) > 0, before)
	switch res.Run {
	case channel.RunNone:
		res.Verdict, res.Confirmed = before, true
		return nil
	case channel.RunRestarted:
		err = m.Restart(ctx, s.Unit)
	default:
		err = m.Start(ctx, s.Unit)
	}
	var job *units.JobError
	if err != nil && !errors.As(err, &job) {
		return err
	}
	// A job that finished other than done is read like any unit that does
	// not hold: the verdict and the logs say why.
	res.Verdict, res.Confirmed, err = h.confirm(ctx, m, s.Unit, req.Settle, req.Wait)
	if err != nil {
		return err
	}
	if !res.Confirmed {
		if ls, lerr := m.Logs(ctx, s.Unit, confirmLogLines); lerr == nil {
			res.Logs = ls
		}
	}
	return nil
}

// DefaultWait bounds an ensure's confirmation when the request names none.
const DefaultWait = 30 * time.Second

// confirm reads the unit until it is active with a main pid that held for
// settle (true), or it is failing, failed, missing, or stopped after a run,
// or wait ran out (false).
func (h *Host) confirm(ctx context.Context, m units.Manager, unit string, settle, wait time.Duration) (units.Verdict, bool, error) {
	if wait <= 0 {
		wait = DefaultWait
	}
	poll := h.Poll
	if poll <= 0 {
		poll = DefaultPoll
	}
	deadline := h.now().Add(wait)
	var pid int
	var since time.Time
	for {
		v, err := m.Show(ctx, unit)
		if err != nil {
			return v, false, err
		}
		now := h.now()
		switch {
		case running(v):
			if v.PID != pid {
				pid, since = v.PID, now
			}
			if now.Sub(since) >= settle {
				return v, true, nil
			}
		case v.State == units.StateFailing, v.State == units.StateFailed, v.State == units.StateMissing:
			return v, false, nil
		case v.State == units.StateInactive && v.Starts > 0:
			return v, false, nil
		default:
			pid = 0
		}
		if now.After(deadline) {
			return v, false, nil
		}
		select {
		case <-ctx.Done():
			return v, false, ctx.Err()
		case <-h.after(poll):
		}
	}
}
