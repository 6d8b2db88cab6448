package fleet

import (
	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
)

// ShownDeclaration is one host's declaration in Show.
type ShownDeclaration struct {
	Host       string           `json:"host"`
	Service    registry.Service `json:"service"`
	Incomplete bool             `json:"incomplete"`
}

// ShowResult is a service's declarations and its catalog entry.
type ShowResult struct {
	Name         string             `json:"name"`
	Revision     int64              `json:"registry_revision"`
	Declarations []ShownDeclaration `json:"declarations"`
	Catalog      *catalog.Product   `json:"catalog,omitempty"`
}

// Show reads name's declarations (by name or unit) on every target and its
// catalog entry, without any host. Env values are masked unless showValues.
func (f *Fleet) Show(name string, showValues bool) (ShowResult, error) {
	res := ShowResult{Name: name, Revision: f.Meta.Revision, Declarations: []ShownDeclaration{}}
	for _, t := range f.Doc.Targets {
		if s, ok := t.Service(name); ok {
			d := *s
			d.Env = MaskEnv(d.Env, showValues)
			res.Declarations = append(res.Declarations, ShownDeclaration{Host: t.Name, Service: d, Incomplete: s.Incomplete()})
		}
	}
	product, ok := f.Catalog.Lookup(name)
	if !ok {
		product, ok = f.Catalog.RecoveryEntry(name)
	}
	if ok {
		res.Catalog = product
	}
	if len(res.Declarations) == 0 && !ok {
		return res, refusal.New(refusal.NotFound, "%s is neither declared on any target nor a catalog product", name)
	}
	return res, nil
}
