package catalog

import (
	"bytes"
	"errors"
	"strings"

	"gopkg.in/yaml.v3"

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
// decoded strictly into registry.UnitSettings and validated by the
// registry's own rules for that init system, so a product cannot carry what
// a declaration could not.
func (c *checker) settings(n *yaml.Node, p string) *Settings {
	f := c.mapping(n, p, "systemd", "launchd")
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
		// validate as the declaration of a one-target document would be
		svc := registry.Service{Name: "catalog-check", Unit: sys.unit, Program: "/bin/true", UnitSettings: us}
		doc := &registry.Document{Version: 1, Targets: []registry.Target{{Name: "catalog-check", OS: sys.os, Services: []registry.Service{svc}}}}
		if sys.os == registry.OSDarwin {
			doc.Targets[0].LaunchdDomain = "system"
		}
		if err := registry.Validate(doc); err != nil {
			if ve, ok := err.(*registry.ValidationError); ok {
				for _, viol := range ve.Violations {
					field := strings.TrimPrefix(viol.Path, "targets[0].services[0].")
					c.add(join(sp, field), v, "%s", viol.Message)
				}
			} else {
				c.add(sp, v, "%v", err)
			}
			continue
		}
		*sys.dst = &us
	}
	return out
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
		e = strings.Replace(e, " in type registry.UnitSettings", "", 1)
		out = append(out, e)
	}
	return strings.Join(out, "; ")
}
