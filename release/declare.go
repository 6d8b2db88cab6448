package release

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

// DeclareRequest sets or clears the version the registry declares for one
// product, fleet-wide or on one target.
type DeclareRequest struct {
	Product string
	// Version is the version to declare; with Clear it may be empty (when
	// given, it must be the one declared, so the wrong entry is not cleared).
	Version string
	// Host is the target whose own entry is set; "" is the fleet-wide entry.
	Host string
	Pin  bool
	// Clear removes the entry instead of setting it.
	Clear  bool
	Reason string
}

// DeclareResult is what Declare wrote.
type DeclareResult struct {
	Product string `json:"product"`
	Host    string `json:"host,omitempty"`
	// Declared is the entry now in the registry (nil once cleared),
	// Previous the one before (nil when there was none).
	Declared *registry.ReleaseDecl `json:"declared,omitempty"`
	Previous *registry.ReleaseDecl `json:"previous,omitempty"`
	// Platforms are the os-arch builds of the declared version in the store.
	Platforms []string `json:"platforms,omitempty"`
	// Unchanged: the registry already said this; nothing was written.
	Unchanged bool        `json:"unchanged"`
	Revision  int64       `json:"revision"`
	Meta      *store.Meta `json:"meta,omitempty"`
}

// Declare changes one declared version through registry.Update, the
// compare-and-swap path `registry push` takes, so the change is a
// revision of the registry history with its writer, time and reason.
// Setting a version refuses (not_found) one that no os/arch build of is
// published in st; a missing reason, a bad name or version are validation
// refusals, an unknown host a not_found refusal. A request that changes
// nothing writes nothing and says Unchanged.
//
// It lives in release rather than registry because its one rule beyond
// the document's — only a published version may be declared — is a
// question to the release objects of the store, which the registry does
// not know.
func Declare(ctx context.Context, st store.Store, req DeclareRequest) (DeclareResult, error) {
	res := DeclareResult{Product: req.Product, Host: req.Host}
	if strings.TrimSpace(req.Reason) == "" {
		return res, refusal.New(refusal.Validation, "a reason is required: it is recorded in the registry history")
	}
	if err := ValidProduct(req.Product); err != nil {
		return res, err
	}
	var decl *registry.ReleaseDecl
	if !req.Clear {
		if err := ValidVersion(req.Version); err != nil {
			return res, err
		}
		plats, err := Platforms(ctx, st, req.Product, req.Version)
		if err != nil {
			return res, err
		}
		if len(plats) == 0 {
			return res, &refusal.Error{Code: refusal.NotFound,
				Message: fmt.Sprintf("%s %s is not published for any os/arch; only a published version can be declared", req.Product, req.Version),
				Hint:    "stado release publish " + req.Product + " " + req.Version + " FILE --os OS --arch ARCH --key KEY"}
		}
		res.Platforms = plats
		decl = &registry.ReleaseDecl{Version: req.Version, Pin: req.Pin}
	}
	errUnchanged := errors.New("unchanged")
	var previous *registry.ReleaseDecl
	_, meta, err := registry.Update(ctx, st, req.Reason, func(d *registry.Document) error {
		previous = nil
		m := d.Releases
		if req.Host != "" {
			t, ok := d.Target(req.Host)
			if !ok {
				return refusal.New(refusal.NotFound, "no target named %s in the registry", req.Host)
			}
			m = t.Releases
		}
		if r, ok := m[req.Product]; ok {
			previous = &r
		}
		if req.Clear && req.Version != "" && (previous == nil || previous.Version != req.Version) {
			return refusal.New(refusal.Conflict, "%s declares %s, not %s: nothing cleared", where(req), describe(previous), req.Version)
		}
		changed, err := d.SetRelease(req.Host, req.Product, decl)
		if err == nil && !changed {
			return errUnchanged
		}
		return err
	})
	res.Declared, res.Previous = decl, previous
	if errors.Is(err, errUnchanged) {
		res.Unchanged = true
		if _, m, err := registry.Load(ctx, st); err == nil {
			res.Revision = m.Revision
		}
		return res, nil
	}
	if err != nil && meta.Revision == 0 {
		return res, err
	}
	res.Revision, res.Meta = meta.Revision, &meta
	return res, err
}

func where(req DeclareRequest) string {
	if req.Host == "" {
		return "the fleet-wide entry of " + req.Product
	}
	return "the entry of " + req.Product + " on " + req.Host
}

func describe(d *registry.ReleaseDecl) string {
	if d == nil {
		return "nothing"
	}
	return d.Version
}

// Lines of Declare's result, for the command's text form.
func (r DeclareResult) Lines() []string {
	scope := "fleet-wide"
	if r.Host != "" {
		scope = "on " + r.Host
	}
	switch {
	case r.Unchanged:
		return []string{fmt.Sprintf("no change: %s %s already declares %s; registry stays at revision %d", r.Product, scope, describe(r.Declared), r.Revision)}
	case r.Declared == nil:
		return []string{fmt.Sprintf("cleared %s %s (was %s): registry revision %d", r.Product, scope, describe(r.Previous), r.Revision)}
	}
	pin := ""
	if r.Declared.Pin {
		pin = " (pinned)"
	}
	return []string{
		fmt.Sprintf("declared %s %s%s %s (was %s): registry revision %d", r.Product, r.Declared.Version, pin, scope, describe(r.Previous), r.Revision),
		"  published for " + strings.Join(r.Platforms, ", "),
	}
}
