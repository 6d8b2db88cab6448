package rollout

import (
	"maps"
	"slices"

	"github.com/wisent/stado/registry"
)

// DeclarationsOf reads the registry's releases section: every product it
// names (top level or under a target) and, per target, the version a
// target's own entry declares or else the fleet-wide one.
func DeclarationsOf(doc *registry.Document) Declarations {
	products := map[string]bool{}
	for p := range doc.Releases {
		products[p] = true
	}
	for i := range doc.Targets {
		for p := range doc.Targets[i].Releases {
			products[p] = true
		}
	}
	return Declarations{Products: slices.Sorted(maps.Keys(products)), Release: func(t, p string) (string, bool, bool) {
		d, ok := doc.DeclaredRelease(t, p)
		return d.Version, d.Pin, ok
	}}
}
