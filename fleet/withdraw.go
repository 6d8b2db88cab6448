package fleet

import (
	"context"
	"fmt"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/registry"
)

// WithdrawOptions name one declaration on one host.
type WithdrawOptions struct {
	Name   string // the declaration's name or unit
	Host   string
	Reason string
	DryRun bool
	// NoDrain stops the unit (retire) or withdraws the declaration
	// (remove) without running the product's drain step.
	NoDrain bool
}

// WithdrawResult is what retire and remove did (or would do). Env values
// are masked.
type WithdrawResult struct {
	Host      string           `json:"host"`
	Service   registry.Service `json:"service"`
	Path      string           `json:"path,omitempty"`
	UnitFound bool             `json:"unit_file_removed,omitempty"`
	Revision  int64            `json:"registry_revision,omitempty"`
	DryRun    bool             `json:"dry_run,omitempty"`
	Plan      []string         `json:"plan,omitempty"`
	// Drain is what the product's drain step did first; nil when the
	// product declares none.
	Drain *Drain     `json:"drain,omitempty"`
	Error *HostError `json:"error,omitempty"`
}

// Retire stops the declared unit, removes it from its host (one channel
// call) and withdraws its declaration. A declaration of a product with a
// drain step (catalog.Product.Drain) runs that step on the host first; a
// failed drain is refused with drain_failed and nothing is stopped or
// withdrawn, unless o.NoDrain skips it. A name no declaration covers is
// refused with not_found; a unit on the fixed recovery list (the host
// process itself) with recovery_unit, before any host is reached.
func (f *Fleet) Retire(ctx context.Context, o WithdrawOptions) (WithdrawResult, error) {
	res := WithdrawResult{Host: o.Host, DryRun: o.DryRun}
	t, s, err := f.Declared(o.Host, o.Name)
	if err != nil {
		return res, err
	}
	if err := refuseRecoveryUnit(f.Catalog, "retire", o.Name, s); err != nil {
		return res, err
	}
	res.Service = s.Masked(false)
	where := s.UnitPath
	if where == "" {
		where = "its " + s.EffectiveScope() + " unit directory"
	}
	drain := planDrain(f.Catalog, s, o, &res)
	res.Plan = append(res.Plan, "unit-remove "+s.Unit+" from "+where+" (stops and unloads it)", withdrawWords(f.Doc, t, s))
	if o.DryRun {
		res.Path = s.UnitPath
		return res, nil
	}
	h, err := f.host(t)
	if err != nil {
		return res, err
	}
	if drain != nil {
		if err := runDrain(ctx, h, t.Name, drain); err != nil {
			return res, err
		}
	}
	rm, err := h.UnitRemove(ctx, channel.RemoveRequest{UnitRef: actingRef(t, s), Path: s.UnitPath})
	if err != nil {
		return res, err
	}
	res.Path, res.UnitFound = rm.Path, rm.Removed
	rev, err := f.withdraw(ctx, t.Name, s.Name, reasonWithDrain(Reason(o.Reason, "service retire %s on %s", s.Name, t.Name), res.Drain))
	if err != nil {
		return res, &stagedError{host: t.Name, stage: StageRegistry, err: err}
	}
	res.Revision = rev
	return res, nil
}

// Remove withdraws a declaration and leaves the host's unit untouched. The
// one channel call it makes is the drain step of a product that declares
// one (catalog.Product.Drain), run first and refused with drain_failed
// when it fails, unless o.NoDrain skips it; any other declaration is
// withdrawn without a channel call. A declaration that is not there is
// refused with not_found; one of a unit on the fixed recovery list with
// recovery_unit.
func (f *Fleet) Remove(ctx context.Context, o WithdrawOptions) (WithdrawResult, error) {
	res := WithdrawResult{Host: o.Host, DryRun: o.DryRun}
	t, s, err := f.Declared(o.Host, o.Name)
	if err != nil {
		return res, err
	}
	if err := refuseRecoveryUnit(f.Catalog, "remove", o.Name, s); err != nil {
		return res, err
	}
	res.Service = s.Masked(false)
	drain := planDrain(f.Catalog, s, o, &res)
	res.Plan = append(res.Plan, withdrawWords(f.Doc, t, s)+" (the host keeps its unit)")
	if o.DryRun {
		return res, nil
	}
	if drain != nil {
		h, err := f.host(t)
		if err != nil {
			return res, err
		}
		if err := runDrain(ctx, h, t.Name, drain); err != nil {
			return res, err
		}
	}
	rev, err := f.withdraw(ctx, t.Name, s.Name, reasonWithDrain(Reason(o.Reason, "service remove %s on %s", s.Name, t.Name), res.Drain))
	if err != nil {
		return res, err
	}
	res.Revision = rev
	return res, nil
}

// withdrawWords says what withdrawing s from t changes in the registry: the
// declaration, and its directory entry on t when it has one.
func withdrawWords(doc *registry.Document, t registry.Target, s registry.Service) string {
	w := fmt.Sprintf("withdraw declaration %s from %s", s.Name, t.Name)
	if _, ok := doc.DirectoryEntryOn(s.Name, t.Name); ok {
		w += " and its directory entry there"
	}
	return w
}
