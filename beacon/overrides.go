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
	for _, t := range d.Targets {
		for _, s := range t.Services {
			for _, o := range cat.Overrides(s, t.OS) {
				out = append(out, Finding{Host: t.Name, Service: s.Name, Unit: s.Unit, Code: "product_setting_overridden",
					Message: fmt.Sprintf("sets %s: %s over product %s's %s, which the catalog marks safety-relevant", o.Setting, o.Got, o.Product, o.Want)})
			}
		}
	}
	return out
}
