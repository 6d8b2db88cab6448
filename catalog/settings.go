package catalog

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/wisent/stado/declaration"
	"github.com/wisent/stado/registry"
)

// Settings are a product's unit settings per init system: what a
// declaration made from the product carries beyond program, args and env
// (registry.UnitSettings). A product whose processes must outlive a restart
// of its main process — an agent keeping workloads — says so here:
// Delegate and KillMode under systemd, AbandonProcessGroup under launchd.
type Settings struct {
	Systemd *registry.UnitSettings `json:"systemd,omitempty" yaml:"systemd,omitempty"`
	Launchd *registry.UnitSettings `json:"launchd,omitempty" yaml:"launchd,omitempty"`
	// Safety names the settings (declaration keys, such as kill_mode)
	// whose override by a declaration puts what the product runs at risk:
	// registry doctor reports a declaration that overrides one.
	Safety []string `json:"safety,omitempty" yaml:"safety,omitempty"`
}

// WithProductSettings returns s with the unit settings of the product it
// names (s.Product) for os merged under its own (UnitSettings.Under): what
// the declaration sets wins, what it leaves out comes from the product. A
// declaration naming no product, or one the catalog does not know, is
// returned as it is. Pure; s is not changed.
func (c *Catalog) WithProductSettings(s registry.Service, os string) registry.Service {
	if s.Product == "" {
		return s
	}
	p, ok := c.products[s.Product]
	if !ok {
		return s
	}
	us := p.Settings.For(os)
	if us == nil {
		return s
	}
	s.UnitSettings = s.UnitSettings.Under(*us)
	return s
}

// Override is a declaration setting a safety-relevant setting of its
// product (Settings.Safety) to another value than the product's.
type Override struct {
	Product string `json:"product"`
	// Setting is the declaration key (kill_mode).
	Setting string `json:"setting"`
	// Product's value and the declaration's, as YAML writes them.
	Want string `json:"want"`
	Got  string `json:"got"`
}

// Overrides returns the safety-relevant settings of the product s names
// that s, declared for a target of os, sets to another value; nil when
// there is none.
func (c *Catalog) Overrides(s registry.Service, os string) []Override {
	if s.Product == "" {
		return nil
	}
	p, ok := c.products[s.Product]
	if !ok || p.Settings == nil {
		return nil
	}
	us := p.Settings.For(os)
	if us == nil {
		return nil
	}
	want, got := settingValues(*us), settingValues(s.UnitSettings)
	var out []Override
	for _, key := range p.Settings.Safety {
		w, set := want[key]
		if g, has := got[key]; set && has && g != w {
			out = append(out, Override{Product: p.Name, Setting: key, Want: w, Got: g})
		}
	}
	return out
}

// OverrideCode is the code of a declaration overriding a safety-relevant
// product setting, in registry validate's warnings and doctor's findings.
const OverrideCode = "product_setting_overridden"

// OverrideWarnings returns a warning for each safety-relevant product
// setting a declaration of d overrides (Overrides), at its field path
// ("targets[0].services[1].kill_mode"), naming the product and both
// values; empty, never nil, when there is none.
func (c *Catalog) OverrideWarnings(d *registry.Document) []registry.Warning {
	out := []registry.Warning{}
	if d == nil {
		return out
	}
	for i, t := range d.Targets {
		for j, s := range t.Services {
			for _, o := range c.Overrides(s, t.OS) {
				out = append(out, registry.Warning{Code: OverrideCode, Host: t.Name, Service: s.Name,
					Path:    fmt.Sprintf("targets[%d].services[%d].%s", i, j, o.Setting),
					Message: fmt.Sprintf("sets %s: %s over product %s's %s, which the catalog marks safety-relevant", o.Setting, o.Got, o.Product, o.Want)})
			}
		}
	}
	return out
}

// Validated is registry validate of d, a valid document read from file,
// with the warnings of this catalog about it (OverrideWarnings).
func (c *Catalog) Validated(file string, d *registry.Document) registry.Validated {
	v := registry.Tally(file, d)
	v.Warnings = c.OverrideWarnings(d)
	return v
}

// settingValues maps each declaration key us sets to its value in YAML.
func settingValues(us registry.UnitSettings) map[string]string {
	out := map[string]string{}
	raw, err := yaml.Marshal(us)
	if err != nil {
		return out
	}
	var m map[string]yaml.Node
	if yaml.Unmarshal(raw, &m) != nil {
		return out
	}
	for k, n := range m {
		b, err := yaml.Marshal(&n)
		if err == nil {
			out[k] = strings.TrimSpace(string(b))
		}
	}
	return out
}

// For returns the settings for a target of os, or nil.
func (s *Settings) For(os string) *registry.UnitSettings {
	if s == nil {
		return nil
	}
	switch os {
	case registry.OSLinux:
		return s.Systemd
	case registry.OSDarwin:
		return s.Launchd
	}
	return nil
}

// settings reads a product's settings block: each init system's mapping is
// decoded strictly into declaration.UnitSettings and validated by
// declaration.ValidateService for that init system, so a product cannot
// carry what a declaration could not.
func (c *checker) settings(n *yaml.Node, p string) *Settings {
	f := c.mapping(n, p, "systemd", "launchd", "safety")
	if f == nil {
		return nil
	}
	out := &Settings{}
	for _, sys := range []struct {
		key, os, unit string
		dst           **registry.UnitSettings
	}{
		{"systemd", registry.OSLinux, "catalog-check.service", &out.Systemd},
		{"launchd", registry.OSDarwin, "com.example.catalog-check", &out.Launchd},
	} {
		v, ok := f[sys.key]
		if !ok || isNull(v) {
			continue
		}
		sp := join(p, sys.key)
		raw, err := yaml.Marshal(v)
		if err != nil {
			c.add(sp, v, "%v", err)
			continue
		}
		var us registry.UnitSettings
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		dec.KnownFields(true)
		if err := dec.Decode(&us); err != nil {
			c.add(sp, v, "%s", decodeProblem(err))
			continue
		}
		// validate as a declaration of this init system would be
		svc := declaration.Service{Name: "catalog-check", Unit: sys.unit, Program: "/bin/true", UnitSettings: us}
		if vs := declaration.ValidateService(&svc, sys.os); len(vs) > 0 {
			for _, viol := range vs {
				at := sp
				if viol.Path != "" {
					at = join(sp, viol.Path)
				}
				c.add(at, v, "%s", viol.Message)
			}
			continue
		}
		*sys.dst = &us
	}
	c.safety(f["safety"], join(p, "safety"), out)
	return out
}

// safety reads the safety list: each item a setting the product itself
// sets for at least one init system, named once.
func (c *checker) safety(n *yaml.Node, p string, out *Settings) {
	if n == nil || isNull(n) {
		return
	}
	keys, ok := c.strList(n, p)
	if !ok {
		return
	}
	sets := map[string]bool{}
	for _, us := range []*registry.UnitSettings{out.Systemd, out.Launchd} {
		if us != nil {
			for k := range settingValues(*us) {
				sets[k] = true
			}
		}
	}
	seen := map[string]bool{}
	for i, k := range keys {
		switch {
		case seen[k]:
			c.add(index(p, i), n.Content[i], "%q is listed twice", k)
		case !sets[k]:
			c.add(index(p, i), n.Content[i], "%q is not a setting this product sets (under systemd or launchd)", k)
		}
		seen[k] = true
	}
	out.Safety = keys
}

// decodeProblem says a strict decode's failure without yaml's line numbers
// of the re-marshalled block (the violation carries the real line).
func decodeProblem(err error) string {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return strings.TrimPrefix(err.Error(), "yaml: ")
	}
	var out []string
	for _, e := range te.Errors {
		if _, rest, ok := strings.Cut(e, ": "); ok && strings.HasPrefix(e, "line ") {
			e = rest
		}
		e = strings.Replace(e, " in type declaration.UnitSettings", "", 1)
		out = append(out, e)
	}
	return strings.Join(out, "; ")
}
