package catalog

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

//go:embed data/products.json
var shippedProducts []byte

//go:embed data/repair-catalog.json
var shippedRepair []byte

// Names of the embedded files, as validation errors report them.
const (
	ProductsFile = "catalog/data/products.json"
	RepairFile   = "catalog/data/repair-catalog.json"
)

var shipped = sync.OnceValues(loadShipped)

// loadShipped parses and validates the embedded files by the same rules as
// a site catalog (plus the recovery list only they may carry).
func loadShipped() (*Catalog, error) {
	products, err := parse(shippedProducts, ProductsFile, OriginShipped)
	if err != nil {
		return nil, err
	}
	repair, err := parse(shippedRepair, RepairFile, OriginShipped)
	if err != nil {
		return nil, err
	}
	if len(products.stepOrder) > 0 || len(repair.list) > 0 || len(repair.recovery) > 0 {
		return nil, fmt.Errorf("shipped catalog: products belong in %s, steps in %s", ProductsFile, RepairFile)
	}
	products.steps = repair.steps
	products.stepOrder = repair.stepOrder
	products.source = ProductsFile + " + " + RepairFile
	return newCatalog().Extend(products)
}

// Shipped returns the catalog embedded in this binary. The embedded data
// is validated once, on first use, by the same rules as a site catalog; a
// test proves it valid, so Shipped panics only on a broken build. The
// returned value is shared and must not be modified.
func Shipped() *Catalog {
	c, err := shipped()
	if err != nil {
		panic("stado: the shipped catalog is invalid: " + err.Error())
	}
	return c
}

// Extend returns a new catalog: c with the fragment site (from Parse)
// merged over it. A site product or step with the name of an existing one
// replaces it; others are added; the recovery list is kept. Extend checks
// the rules that need the merged catalog: every step an answering
// declaration names exists, no unit identity belongs to two products, no
// product takes a recovery entry's name. Errors: *registry.ValidationError
// naming the fragment's field paths. c and site are not modified.
func (c *Catalog) Extend(site *Catalog) (*Catalog, error) {
	m, vs := c.extend(site)
	if len(vs) > 0 {
		return nil, &registry.ValidationError{Source: site.source, Violations: vs}
	}
	return m, nil
}

func (c *Catalog) extend(site *Catalog) (*Catalog, []registry.Violation) {
	m := &Catalog{
		products: maps.Clone(c.products),
		recovery: slices.Clone(c.recovery),
		steps:    maps.Clone(c.steps),
		version:  c.version,
	}
	m.recovery = append(m.recovery, site.recovery...)
	for _, name := range site.stepOrder {
		m.steps[name] = site.steps[name]
	}
	for _, p := range site.list {
		m.products[p.Name] = p
	}
	chk := &checker{}
	for _, p := range site.list {
		for _, r := range m.recovery {
			if r.Name == p.Name {
				chk.add(join(p.path, "name"), nil, "%q is the name of the recovery entry %s", p.Name, r.Name)
			}
		}
		for _, u := range []struct{ field, id string }{{"systemd", p.Units.Systemd}, {"launchd", p.Units.Launchd}} {
			if u.id == "" {
				continue
			}
			for _, other := range m.Products() {
				if other != p && other.Matches(u.id) {
					chk.add(p.path+".units."+u.field, nil, "unit %q already belongs to product %s", u.id, other.Name)
				}
			}
		}
		if p.Drain != "" {
			if _, ok := m.steps[p.Drain]; !ok {
				chk.add(join(p.path, "drain"), nil, "no repair step %q in the catalog (steps: %s)", p.Drain, joinNames(sortedStepNames(m.steps)))
			}
		}
		if p.Answering != nil {
			for j, step := range p.Answering.Repair {
				if _, ok := m.steps[step]; !ok {
					chk.add(index(p.path+".answering.repair", j), nil, "no repair step %q in the catalog (steps: %s)", step, joinNames(sortedStepNames(m.steps)))
				}
			}
		}
	}
	for _, r := range site.recovery {
		if _, ok := m.products[r.Name]; ok {
			chk.add(join(r.path, "name"), nil, "%q is also the name of a product", r.Name)
		}
	}
	return m, chk.out
}

func joinNames(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	out := names[0]
	for _, n := range names[1:] {
		out += ", " + n
	}
	return out
}

// ValidateSite parses a site catalog document and merges it over the
// shipped catalog, returning the merged catalog or a
// *registry.ValidationError carrying every violation. It is what
// `stado catalog validate` runs and what a site document must pass before
// it is stored.
func ValidateSite(data []byte, source string) (*Catalog, error) {
	frag, vs := parseFragment(data, source, OriginSite)
	m, more := Shipped().extend(frag)
	if vs = append(vs, more...); len(vs) > 0 {
		return nil, &registry.ValidationError{Source: source, Violations: vs}
	}
	return m, nil
}

// Load returns the shipped catalog merged with the site catalog document
// stored at store.CatalogKey. An absent key yields the shipped catalog
// alone; a document that breaks a rule yields a *registry.ValidationError
// naming each field path; a store failure is returned wrapped. It reads one
// key and writes nothing.
func Load(ctx context.Context, st store.Store) (*Catalog, error) {
	obj, err := st.Get(ctx, store.CatalogKey)
	if errors.Is(err, store.ErrNotFound) {
		return Shipped(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("read site catalog %s: %w", store.CatalogKey, err)
	}
	source := fmt.Sprintf("site catalog %s (revision %d)", store.CatalogKey, obj.Revision)
	m, err := ValidateSite(obj.Value, source)
	if err != nil {
		return nil, err
	}
	m.siteRevision = obj.Revision
	return m, nil
}
