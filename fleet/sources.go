package fleet

import (
	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
)

// declaredAs returns t's declaration that name addresses: by its name or
// unit identity, else, when name selects a catalog product (its name or any
// of its unit identities), the declaration of that product on t: named as
// the product, with the product's unit identity on t's OS, or naming the
// product in its product field. So `stado`, `stado.service` and
// `com.wisent.stado` address one declaration.
func declaredAs(cat *catalog.Catalog, t registry.Target, name string) (*registry.Service, bool) {
	if s, ok := t.Service(name); ok {
		return s, true
	}
	p, ok := catalog.OrShipped(cat).Lookup(name)
	if !ok {
		return nil, false
	}
	if s, ok := t.Service(p.Name); ok {
		return s, true
	}
	if u := p.Units.For(t.OS); u != "" {
		if s, ok := t.Service(u); ok {
			return s, true
		}
	}
	for i := range t.Services {
		if t.Services[i].Product == p.Name {
			return &t.Services[i], true
		}
	}
	return nil, false
}

// refuseRecoveryUnit refuses verb on a declaration whose unit is on the
// fixed recovery list (or that name selects from it): the host repair step
// manages that unit, and stopping it would stop the host process itself.
func refuseRecoveryUnit(cat *catalog.Catalog, verb, name string, s registry.Service) error {
	cat = catalog.OrShipped(cat)
	entry, ok := cat.RecoveryEntry(s.Unit)
	if !ok {
		entry, ok = cat.RecoveryEntry(name)
	}
	if !ok {
		return nil
	}
	return &refusal.Error{Code: refusal.RecoveryUnit,
		Message: "service " + verb + " " + name + ": " + s.Unit + " is on the fixed recovery list (" + entry.Name + "): the host repair step keeps it running, so it is never " + verb + "d",
		Hint:    "its declaration stays; stado service ensure " + s.Name + " or stado service restart " + s.Name + " act on it"}
}
