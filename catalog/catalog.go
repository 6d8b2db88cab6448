package catalog

import (
	"maps"
	"slices"
	"sort"

	"github.com/wisent/stado/registry"
)

// Sources of a managed unit that the catalog can give (the registry is the
// third source; the catalog never reports it).
const (
	// SourceProduct: located by a product declaration, addressable without
	// a registry record.
	SourceProduct = "product"
	// SourceRecovery: one of the fixed units the host repair step restarts;
	// managed by that fixed program, so neither adopted nor retired.
	SourceRecovery = "recovery"
)

// Origins of a catalog entry.
const (
	OriginShipped = "shipped" // embedded in this stado binary
	OriginSite    = "site"    // the site catalog document in the store
)

// Units are a product's native unit identities, one per OS.
type Units struct {
	// Systemd is the systemd unit name on linux ("brama.service").
	Systemd string `json:"systemd,omitempty" yaml:"systemd,omitempty"`
	// Launchd is the launchd label on darwin ("com.wisent.brama").
	Launchd string `json:"launchd,omitempty" yaml:"launchd,omitempty"`
}

// For returns the identity on os (registry.OSLinux or registry.OSDarwin);
// "" when the product has none there.
func (u Units) For(os string) string {
	switch os {
	case registry.OSLinux:
		return u.Systemd
	case registry.OSDarwin:
		return u.Launchd
	}
	return ""
}

// EnvVar is one environment variable a product needs. Without a default it
// must be supplied by the declaration.
type EnvVar struct {
	Name string `json:"name" yaml:"name"`
	// Default, when non-nil, is the value used when the declaration gives
	// none; nil means the declaration must give one.
	Default     *string `json:"default,omitempty" yaml:"default,omitempty"`
	Description string  `json:"description,omitempty" yaml:"description,omitempty"`
}

// Product is one catalog entry.
type Product struct {
	Name        string `json:"name" yaml:"name"`
	Description string `json:"description,omitempty" yaml:"description,omitempty"`
	// Source is SourceProduct for entries of the products list and
	// SourceRecovery for entries of the recovery list.
	Source  string   `json:"source" yaml:"source"`
	Units   Units    `json:"units" yaml:"units"`
	Program string   `json:"program" yaml:"program"`
	Args    []string `json:"args,omitempty" yaml:"args,omitempty"`
	Env     []EnvVar `json:"env,omitempty" yaml:"env,omitempty"`
	// Port is the default listen port; 0 means the product listens on none
	// (or the catalog does not say).
	Port int `json:"port,omitempty" yaml:"port,omitempty"`
	// Answering is the question asked of the service each beacon pass;
	// nil means the product declares none.
	Answering *Answering `json:"answering,omitempty" yaml:"answering,omitempty"`
	// Settings are unit settings per init system (settings.go); nil means
	// none beyond stado's defaults.
	Settings *Settings `json:"settings,omitempty" yaml:"settings,omitempty"`
	// Drain names the repair-catalog step that asks the product to stop
	// what it runs on the host (an agent's workloads) before its unit is
	// stopped: service retire and remove run it first (drain.go). "" means
	// the product owns nothing that outlives its unit.
	Drain string `json:"drain,omitempty" yaml:"drain,omitempty"`
	// Origin is OriginShipped or OriginSite.
	Origin string `json:"origin" yaml:"origin"`

	path string // field path in the document it came from ("products[2]")
}

// Supports reports whether the product has a unit identity on os.
func (p *Product) Supports(os string) bool { return p.Units.For(os) != "" }

// Matches reports whether nameOrUnit is the product's name or one of its
// native unit identities.
func (p *Product) Matches(nameOrUnit string) bool {
	return nameOrUnit != "" && (nameOrUnit == p.Name || nameOrUnit == p.Units.Systemd || nameOrUnit == p.Units.Launchd)
}

// RequiredEnv returns the names of the variables that have no default, in
// catalog order: a declaration must supply each of them.
func (p *Product) RequiredEnv() []string {
	var out []string
	for _, e := range p.Env {
		if e.Default == nil {
			out = append(out, e.Name)
		}
	}
	return out
}

// EnvDefaults returns the variables that have a default, with it.
func (p *Product) EnvDefaults() map[string]string {
	out := map[string]string{}
	for _, e := range p.Env {
		if e.Default != nil {
			out[e.Name] = *e.Default
		}
	}
	return out
}

// MissingEnv returns, in catalog order, the required variables (those
// without a default) that env does not set to a non-empty value.
func (p *Product) MissingEnv(env map[string]string) []string {
	var out []string
	for _, name := range p.RequiredEnv() {
		if env[name] == "" {
			out = append(out, name)
		}
	}
	return out
}

// Declaration returns the declaration ensure records for the product on a
// host of os when the registry holds none: the unit identity for os (empty
// when the product has none there; check Supports), program, args, the
// environment defaults, scope as given and the product name. UnitPath is
// left empty so the OS default applies; KeepAlive is nil (true). Required
// variables without a default are not filled in: see MissingEnv.
func (p *Product) Declaration(os, scope string) registry.Service {
	s := registry.Service{
		Name:    p.Name,
		Unit:    p.Units.For(os),
		Program: p.Program,
		Args:    slices.Clone(p.Args),
		Scope:   scope,
		Product: p.Name,
	}
	if d := p.EnvDefaults(); len(d) > 0 {
		s.Env = d
	}
	if us := p.Settings.For(os); us != nil {
		s.UnitSettings = cloneSettings(*us)
	}
	return s
}

// cloneSettings deep-copies the settings (declaration's own clone), so a
// declaration never shares slices or maps with the catalog.
func cloneSettings(us registry.UnitSettings) registry.UnitSettings { return us.Clone() }

// Catalog is the merged catalog: products, the fixed recovery list and the
// repair steps. A *Catalog is immutable once built and safe for concurrent
// use; Shipped returns the same value to every caller.
type Catalog struct {
	products map[string]*Product
	recovery []*Product
	steps    map[string]*RepairStep
	// list and stepOrder keep a parsed fragment's entries in document
	// order, for violations reported in that order; source names it.
	list      []*Product
	stepOrder []string
	source    string
	// siteRevision is the store revision of the site document merged in;
	// 0 when none was.
	siteRevision int64
	version      int
}

func newCatalog() *Catalog {
	return &Catalog{products: map[string]*Product{}, steps: map[string]*RepairStep{}}
}

// Products returns every product sorted by name.
func (c *Catalog) Products() []*Product {
	names := slices.Sorted(maps.Keys(c.products))
	out := make([]*Product, 0, len(names))
	for _, n := range names {
		out = append(out, c.products[n])
	}
	return out
}

// Recovery returns the fixed recovery list, in catalog order: the units
// `stado repair stado --step host` restarts. Each entry has Source
// SourceRecovery.
func (c *Catalog) Recovery() []*Product { return slices.Clone(c.recovery) }

// Lookup returns the product whose name, systemd unit or launchd label is
// nameOrUnit. A name wins over a unit identity. The recovery list is not
// searched: see RecoveryEntry.
func (c *Catalog) Lookup(nameOrUnit string) (*Product, bool) {
	if p, ok := c.products[nameOrUnit]; ok {
		return p, true
	}
	for _, p := range c.Products() {
		if p.Matches(nameOrUnit) {
			return p, true
		}
	}
	return nil, false
}

// RecoveryEntry returns the recovery-list entry whose name or unit identity
// is nameOrUnit.
func (c *Catalog) RecoveryEntry(nameOrUnit string) (*Product, bool) {
	for _, p := range c.recovery {
		if p.Matches(nameOrUnit) {
			return p, true
		}
	}
	return nil, false
}

// Step returns the repair step named name.
func (c *Catalog) Step(name string) (*RepairStep, bool) {
	s, ok := c.steps[name]
	return s, ok
}

// Steps returns every repair step sorted by name.
func (c *Catalog) Steps() []*RepairStep {
	names := slices.Sorted(maps.Keys(c.steps))
	out := make([]*RepairStep, 0, len(names))
	for _, n := range names {
		out = append(out, c.steps[n])
	}
	return out
}

// SiteRevision is the store revision of the site catalog merged into c, or
// 0 when c holds the shipped catalog only.
func (c *Catalog) SiteRevision() int64 { return c.siteRevision }

// sortedStepNames lists step names for messages.
func sortedStepNames(m map[string]*RepairStep) []string {
	out := slices.Collect(maps.Keys(m))
	sort.Strings(out)
	return out
}
