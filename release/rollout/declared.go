package rollout

import (
	"slices"

	"github.com/wisent/stado/registry"
)

// Declarations is what rollout reads of the registry's releases section;
// cli builds it from the document it loaded.
type Declarations struct {
	// Products lists every product the document declares a version of,
	// fleet-wide or for any target.
	Products []string
	// Release returns the version declared for product on target (a
	// target's own declaration wins over the fleet-wide one), whether the
	// registry pins exactly that version, and false when it declares none.
	// Nil declares nothing.
	Release func(target, product string) (version string, pin bool, ok bool)
}

func (d Declarations) release(target, product string) (string, bool, bool) {
	if d.Release == nil {
		return "", false, false
	}
	return d.Release(target, product)
}

// declaredOn lists the products with a version declared for target, sorted,
// keeping only product when it is not empty.
func (d Declarations) declaredOn(target, product string) []string {
	var out []string
	for _, p := range d.Products {
		if product != "" && p != product {
			continue
		}
		if _, _, ok := d.release(target, p); ok && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// serviceOf returns t's service whose declaration names product, or nil
// (the registry allows one per host).
func serviceOf(t *registry.Target, product string) *registry.Service {
	for i := range t.Services {
		if t.Services[i].Product == product {
			return &t.Services[i]
		}
	}
	return nil
}
