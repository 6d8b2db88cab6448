package beacon

import (
	"fmt"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/registry"
)

// overrideFindings are doctor's findings of declarations that set a
// setting their product marks safety-relevant (the Oarbank agent's
// kill_mode) to another value than the product's: a warning the operator
// reads, not a refusal — the declaration stays valid and renders with its
// own value.
func overrideFindings(cat *catalog.Catalog, d *registry.Document) []Finding {
	if cat == nil || d == nil {
		return nil
	}
	var out []Finding
	for _, w := range cat.OverrideWarnings(d) {
		unit := ""
		if t, ok := d.Target(w.Host); ok {
			if s, _ := t.Service(w.Service); s != nil {
				unit = s.Unit
			}
		}
		out = append(out, Finding{Host: w.Host, Service: w.Service, Unit: unit, Code: w.Code,
			Message: fmt.Sprintf("%s (registry field %s)", w.Message, w.Path)})
	}
	return out
}
