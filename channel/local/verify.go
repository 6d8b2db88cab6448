package local

import (
	"context"
	"errors"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/svcproto"
	"github.com/wisent/stado/units"
)

// verifyLogLines is how many log lines a check carries for a unit that
// ran and runs no more.
const verifyLogLines = 10

// Verify reads every declaration of req against this host and changes
// nothing: each unit's verdict (one batched read per scope), its file
// against what the declaration renders here (the same rendering ensure
// installs), its last log lines when it ran and stopped, and, for a
// service with a directory port, who listens on that port and which ports
// the unit's own processes listen on. What cannot be read for one
// declaration (it renders nothing, its path is refused) is that check's
// Refusal; the others are still read.
func (h *Host) Verify(ctx context.Context, req channel.VerifyRequest) (channel.VerifyResult, error) {
	res := channel.VerifyResult{Units: make([]channel.UnitCheck, len(req.Services))}
	if req.OS != "" && req.OS != h.OS() {
		return channel.VerifyResult{}, refusal.New(refusal.OSMismatch, "the registry says this host runs %s, and it runs %s", req.OS, h.OS())
	}
	if err := h.checkDomain(req.LaunchdDomain); err != nil {
		return channel.VerifyResult{}, err
	}
	byScope := map[string][]int{}
	var scopes []string
	rendered := make([][]byte, len(req.Services))
	for i, vs := range req.Services {
		s := vs.Service
		c := &res.Units[i]
		*c = channel.UnitCheck{Service: s.Name, Unit: s.Unit, Scope: s.EffectiveScope(), Port: vs.Port, Address: vs.Address}
		if _, ok := byScope[c.Scope]; !ok {
			scopes = append(scopes, c.Scope)
		}
		byScope[c.Scope] = append(byScope[c.Scope], i)
		vs.Service = h.withProductSettings(ctx, vs.Service)
		rendered[i] = h.checkFile(vs, c)
	}
	for _, scope := range scopes {
		idx := byScope[scope]
		names := make([]string, len(idx))
		for k, i := range idx {
			names[k] = res.Units[i].Unit
		}
		err := h.withDomainManager(ctx, scope, req.LaunchdDomain, func(m units.Manager) error {
			vs, err := m.ShowMany(ctx, names)
			if err != nil {
				return err
			}
			for k, i := range idx {
				if k < len(vs) {
					res.Units[i].Verdict = vs[k]
				}
				c := &res.Units[i]
				h.readRepeatingDropIns(ctx, m, rendered[i], c)
				if ranAndStopped(c.Verdict) {
					if ls, err := m.Logs(ctx, c.Unit, verifyLogLines); err == nil {
						c.Logs = ls
					}
				}
			}
			return nil
		})
		if err != nil {
			return channel.VerifyResult{}, err
		}
	}
	for i, vs := range req.Services {
		if sp := vs.Service.Protocol; sp != nil && !sp.Probe && len(sp.Exec) > 0 {
			res.Units[i].Protocol = h.readReady(ctx, h.nodeID(), vs.Service)
		}
	}
	for i := range res.Units {
		c := &res.Units[i]
		if c.Port <= 0 {
			continue
		}
		ls, own, err := units.ReadPorts(ctx, h.ports(), c.Port, units.Job{Unit: c.Unit, PID: c.Verdict.PID})
		if err != nil {
			return channel.VerifyResult{}, err
		}
		c.Listeners = ls
		for _, l := range own {
			c.UnitSockets = append(c.UnitSockets, channel.UnitSocket{Address: l.Address, Port: l.Port, PID: l.PID, Program: l.Program})
		}
	}
	return res, nil
}

// ranAndStopped is a unit whose program ran and runs no process now.
func ranAndStopped(v units.Verdict) bool {
	switch v.State {
	case units.StateFailed, units.StateFailing:
		return true
	case units.StateInactive:
		return v.Starts > 0
	}
	return false
}

// readRepeatingDropIns names in c the drop-ins systemd applies to the unit
// that repeat commands of rendered (what ensure writes), which the next
// ensure sets aside or refuses (dropins.go). Nothing is read for a unit
// with no rendering or that systemd does not hold. Drop-ins that cannot be
// read (one past units.MaxFileBytes, one removed meanwhile) leave the list
// empty rather than the whole host's reading unanswered: ensure, which
// reads them again before it writes, says why.
func (h *Host) readRepeatingDropIns(ctx context.Context, m units.Manager, rendered []byte, c *channel.UnitCheck) {
	if rendered == nil || h.OS() != registry.OSLinux || c.Verdict.State == units.StateMissing {
		return
	}
	_, dropins, err := units.DropInsOf(ctx, m, c.Unit)
	if err != nil {
		return
	}
	for _, r := range units.DropInsRepeating(rendered, c.Unit, dropins) {
		c.RepeatingDropIns = append(c.RepeatingDropIns, r.Path)
	}
}

// checkFile compares the unit file at the declaration's path with what the
// declaration renders on this host, and returns that rendering (nil when
// there is none to compare).
func (h *Host) checkFile(vs channel.VerifyService, c *channel.UnitCheck) []byte {
	s := vs.Service
	u := channel.UnitRef{Scope: c.Scope, Unit: s.Unit}
	c.Path = units.UnitPath(s, h.OS(), h.Home)
	if err := h.checkPath(u, c.Path); err != nil {
		c.Refusal = channel.RefusalOf(err)
		return nil
	}
	in, err := units.CompareInstalled(s, h.OS(), h.Home) // what ensure would write over it
	c.FileAbsent, c.Drift = in.Absent, in.Drift
	var re *units.RenderError
	switch {
	case errors.As(err, &re):
		c.Refusal = &channel.UnitRefusal{Code: refusal.Validation, Message: err.Error()}
		return nil
	case err != nil: // an incomplete declaration, or a file that cannot be read
		c.Refusal = channel.RefusalOf(err)
		return nil
	}
	if in.Drift {
		c.Diff = units.Diff(c.Path, string(in.Installed), string(in.Rendered))
	}
	return in.Rendered
}

// readReady runs the declaration's protocol executable's ready operation
// (read-only, bounded by the protocol's timeout) as the agent would run it
// (svcproto.Invocation): the protocol's environment with this host as the
// node, cwd the bundle root, a user-scope declaration as the login user.
func (h *Host) readReady(ctx context.Context, node string, s registry.Service) *channel.ProtocolReading {
	env, opts, err := svcproto.Invocation(s, svcproto.Node{ID: node, OS: h.OS(), Path: units.FixedPath(h.OS()), ScopeUser: h.User})
	if err != nil {
		return &channel.ProtocolReading{Op: svcproto.OpReady, Cause: err.Error()}
	}
	st, err := svcproto.ReadStatus(ctx, opts.Runner(), s.Protocol.Exec, svcproto.OpReady, env)
	if err != nil {
		var pe *svcproto.Error
		if errors.As(err, &pe) {
			return &channel.ProtocolReading{Op: pe.Op, Cause: pe.Cause}
		}
		return &channel.ProtocolReading{Op: svcproto.OpReady, Cause: err.Error()}
	}
	return &channel.ProtocolReading{Running: &st.Running, Ready: &st.Ready}
}
