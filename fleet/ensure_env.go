package fleet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/declaration"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
)

// ParseEnvAssignments reads --env KEY=VALUE flags into a map. A malformed
// assignment, a name the registry refuses, a value with a control
// character or a name given twice with two values is refused naming it.
func ParseEnvAssignments(list []string) (map[string]string, error) {
	if len(list) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(list))
	for _, a := range list {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			return nil, refusal.New(refusal.Usage, "--env %q is not KEY=VALUE", redactAssignment(a))
		}
		if err := declaration.CheckEnvName(k); err != nil {
			return nil, refusal.New(refusal.Usage, "--env %s: %v", k, err)
		}
		if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return nil, refusal.New(refusal.Usage, "--env %s: the value contains a control character", k)
		}
		if old, dup := out[k]; dup && old != v {
			return nil, refusal.New(refusal.Usage, "--env %s is given twice with different values", k)
		}
		out[k] = v
	}
	return out, nil
}

// redactAssignment keeps a malformed --env argument out of an error when it
// may be a secret: only its first characters are shown.
func redactAssignment(a string) string {
	if len(a) > 12 {
		return a[:12] + "…"
	}
	return a
}

// withEnv returns s with env's values set over its own (s is a copy; its
// map is not shared).
func withEnv(s registry.Service, env map[string]string) registry.Service {
	if len(env) == 0 {
		return s
	}
	merged := maps.Clone(s.Env)
	if merged == nil {
		merged = map[string]string{}
	}
	maps.Copy(merged, env)
	s.Env = merged
	return s
}

// envChanges reports whether env sets any value s does not already have.
func envChanges(s registry.Service, env map[string]string) bool {
	for k, v := range env {
		if cur, ok := s.Env[k]; !ok || cur != v {
			return true
		}
	}
	return false
}

// requiredEnvRefusal refuses a declaration that lacks a variable its
// catalog product requires, naming each missing one; nil when none is
// missing or the declaration is no product's instance.
func requiredEnvRefusal(cat *catalog.Catalog, host string, s registry.Service) error {
	p := productOf(cat, s)
	if p == nil {
		return nil
	}
	missing := p.MissingEnv(s.Env)
	if len(missing) == 0 {
		return nil
	}
	return &refusal.Error{Code: refusal.Validation,
		Message: fmt.Sprintf("%s on %s lacks %s, which catalog product %s requires", s.Name, host, strings.Join(missing, ", "), p.Name),
		Hint:    fmt.Sprintf("stado service ensure %s --host %s --env %s=VALUE", s.Name, host, missing[0])}
}

// productOf is the catalog product a declaration is an instance of: by its
// product field, else its name, else its unit; nil when none.
func productOf(cat *catalog.Catalog, s registry.Service) *catalog.Product {
	c := catalog.OrShipped(cat)
	for _, key := range []string{s.Product, s.Name, s.Unit} {
		if key == "" {
			continue
		}
		if p, ok := c.Lookup(key); ok {
			return p
		}
	}
	return nil
}

// recordEnv writes env into the declarations of the planned hosts that
// declare the service and lack one of its values, in one compare-and-swap.
// Only plans that go ahead are written. The plans' services already carry
// the values.
func (f *Fleet) recordEnv(ctx context.Context, plans []ensurePlan, env map[string]string, reason string) (int64, error) {
	type key struct{ host, service string }
	var todo []key
	for _, p := range plans {
		if p.refused == nil && !p.fromCatalog && p.envChanged {
			todo = append(todo, key{p.target.Name, p.service.Name})
		}
	}
	if len(todo) == 0 {
		return 0, nil
	}
	_, meta, err := registry.Update(ctx, f.Store, reason, func(d *registry.Document) error {
		changed := false
		for _, k := range todo {
			t, ok := d.Target(k.host)
			if !ok {
				return refusal.New(refusal.NotFound, "target %s left the registry", k.host)
			}
			s, ok := t.Service(k.service)
			if !ok {
				return refusal.New(refusal.NotFound, "%s is no longer declared on %s", k.service, k.host)
			}
			if envChanges(*s, env) {
				*s, changed = withEnv(*s, env), true
			}
		}
		if !changed {
			return errEnvRecorded // another writer recorded the same values
		}
		return nil
	})
	if errors.Is(err, errEnvRecorded) {
		return 0, nil
	}
	return meta.Revision, err
}

var errEnvRecorded = errors.New("env already recorded")

// envNames lists env's names, sorted, for plans and reports.
func envNames(env map[string]string) []string {
	names := slices.Collect(maps.Keys(env))
	sort.Strings(names)
	return names
}
