package catalog

import (
	"bytes"
	"errors"
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
		e = strings.Replace(e, " in type declaration.UnitSettings", "", 1)
		out = append(out, e)
	}
	return strings.Join(out, "; ")
}
