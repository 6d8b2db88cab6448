package fleet

import (
	"context"
	"fmt"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/declaration"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/units"
)

// AdoptOptions name a unit a host already runs.
type AdoptOptions struct {
	Unit   string
	Host   string
	Name   string // the declaration's name; default from the unit
	User   bool   // a unit of the login user's manager
	Reason string
	DryRun bool
}

// AdoptResult is what adopt recorded (or would record). Env values are
// masked.
type AdoptResult struct {
	Host     string           `json:"host"`
	Unit     string           `json:"unit"`
	Path     string           `json:"path,omitempty"`
	Service  registry.Service `json:"service"`
	Complete bool             `json:"complete"`
	Reason   string           `json:"incomplete_reason,omitempty"`
	// Blockers names every assignment that keeps the unit incomplete, each
	// with its file, line and what would make it adoptable.
	Blockers []units.Blocker `json:"blockers,omitempty"`
	// ScopeGuess says the scope was assumed, not read from the directory.
	ScopeGuess string     `json:"scope_guess,omitempty"`
	Revision   int64      `json:"registry_revision,omitempty"`
	DryRun     bool       `json:"dry_run,omitempty"`
	Error      *HostError `json:"error,omitempty"`
}

// AlreadyDeclared is the refusal of adopting what a declaration covers.
func AlreadyDeclared(name, host string) *refusal.Error {
	return &refusal.Error{Code: refusal.AlreadyDeclared, Message: fmt.Sprintf("%s is already declared on %s", name, host),
		Hint: "stado service show " + name + " prints the declaration"}
}

// Adopt reads a loaded unit's file and drop-ins from its host in one call,
// parses them and records the declaration: complete when the unit renders
// back from it, path-only with the reason otherwise. Refusals: an unknown
// target, a unit already declared, a recovery unit, a unit not loaded or
// without a file.
func (f *Fleet) Adopt(ctx context.Context, o AdoptOptions) (AdoptResult, error) {
	res := AdoptResult{Host: o.Host, Unit: o.Unit, DryRun: o.DryRun}
	t, err := f.Target(o.Host)
	if err != nil {
		return res, err
	}
	if _, ok := t.Service(o.Unit); ok {
		return res, AlreadyDeclared(o.Unit, t.Name)
	}
	if _, ok := f.Catalog.RecoveryEntry(o.Unit); ok {
		return res, refusal.New(refusal.RecoveryUnit, "%s is on the fixed recovery list: the host repair step manages it, so it is not adopted", o.Unit)
	}
	h, err := f.host(t)
	if err != nil {
		return res, err
	}
	scope := registry.ScopeSystem
	if o.User {
		scope = registry.ScopeUser
	}
	fr, err := h.UnitFile(ctx, channel.UnitRef{Scope: scope, Unit: o.Unit})
	if err != nil {
		return res, err
	}
	if fr.Verdict.State == units.StateMissing {
		return res, refusal.New(refusal.NotFound, "unit %s is not loaded on %s", o.Unit, t.Name)
	}
	file := fr.File
	if file == nil {
		return res, refusal.New(refusal.NotFound, "unit %s on %s has no unit file to adopt", o.Unit, t.Name)
	}
	// A template's instance is read as that instance, not as the template.
	parsed, err := units.ParseUnitOn(file.Hostname, file.Path, o.Unit, []byte(file.Content), file.DropIns)
	if err != nil {
		return res, fmt.Errorf("%s: adopt %s: %w", t.Name, o.Unit, err)
	}
	s := parsed.Service
	if t.OS == registry.OSLinux && declaration.CheckUnitPath(t.OS, s.EffectiveScope(), s.Unit, s.UnitPath) != nil {
		// A packaged unit (/lib/systemd/system, /usr/lib/systemd/system):
		// stado reinstalls it in /etc/systemd/system, which systemd reads
		// first, and leaves the package's file alone.
		s.UnitPath = ""
	}
	if o.Name != "" {
		s.Name = o.Name
	}
	if parsed.Complete {
		s = units.Canonical(s, t.OS, file.Home)
	}
	if _, ok := t.Service(s.Name); ok {
		return res, AlreadyDeclared(s.Name, t.Name)
	}
	res.Path, res.Service, res.Complete, res.Reason = file.Path, s, parsed.Complete, parsed.Reason
	res.Blockers, res.ScopeGuess = parsed.Blockers, parsed.ScopeGuess
	res.Service = res.Service.Masked(false)
	if o.DryRun {
		return res, nil
	}
	reason := Reason(o.Reason, "service adopt %s on %s", o.Unit, t.Name)
	_, meta, err := registry.Update(ctx, f.Store, reason, func(d *registry.Document) error {
		dt, ok := d.Target(t.Name)
		if !ok {
			return refusal.New(refusal.NotFound, "target %s left the registry", t.Name)
		}
		if _, ok := dt.Service(s.Name); ok {
			return AlreadyDeclared(s.Name, t.Name)
		}
		if _, ok := dt.Service(s.Unit); ok {
			return AlreadyDeclared(s.Unit, t.Name)
		}
		dt.Services = append(dt.Services, s)
		return nil
	})
	if err != nil {
		return res, err
	}
	res.Revision = meta.Revision
	return res, nil
}
