package registry

import (
	"sort"
	"strconv"
	"strings"

	"github.com/wisent/stado/declaration"
	"github.com/wisent/stado/refusal"
)

// ReleaseDecl is the version of one product the registry declares: at the
// top level for every target, or under a target for that target alone.
type ReleaseDecl struct {
	// Version is the declared version (ReleaseVersionProblem's grammar).
	Version string `yaml:"version" json:"version"`
	// Pin says "exactly this version": a host may go to it even when it is
	// older than the version the host has active.
	Pin bool `yaml:"pin,omitempty" json:"pin,omitempty"`
}

// MaxReleaseVersionBytes bounds a declared (and published) version.
const MaxReleaseVersionBytes = 64

var (
	versionFirst = declaration.Chars("A-Za-z0-9")
	versionRest  = declaration.Chars("A-Za-z0-9.+_-")
)

// ReleaseProductProblem says why p is not a product name of the release
// flow, or "" when it is one: a service name (declaration.ValidServiceName)
// without "..", which no store key may hold.
func ReleaseProductProblem(p string) string {
	if p == "" {
		return "missing"
	}
	if !declaration.ValidServiceName(p) || strings.Contains(p, "..") {
		return strconv.Quote(p) + " is not a product name (a letter or digit first, then letters, digits, '_', '.', '@', '-'; no '..'; at most 128)"
	}
	return ""
}

// ReleaseVersionProblem says why v is not a release version, or "" when it
// is one: a letter or digit first, then letters, digits, '.', '+', '_' and
// '-', at most 64 bytes, and no "..".
func ReleaseVersionProblem(v string) string {
	if v == "" {
		return "missing"
	}
	if !declaration.Grammar(v, versionFirst, versionRest, MaxReleaseVersionBytes) || strings.Contains(v, "..") {
		return strconv.Quote(v) + " is not a version (a letter or digit first, then letters, digits, '.', '+', '_', '-'; no '..'; at most 64)"
	}
	return ""
}

// DeclaredRelease returns the version the document declares for product on
// target: the target's own entry when it has one, else the top-level entry.
// target "" reads the top level only. false: nothing is declared.
func (d *Document) DeclaredRelease(target, product string) (ReleaseDecl, bool) {
	if target != "" {
		if t, ok := d.Target(target); ok {
			if r, ok := t.Releases[product]; ok {
				return r, true
			}
		}
	}
	r, ok := d.Releases[product]
	return r, ok
}

// SetRelease declares decl for product on target (the top level when
// target is ""), or removes the declaration when decl is nil. It returns
// whether the document changed. An unknown target is a not_found refusal.
// It does not validate: the caller writes d through Update or Push, which do.
func (d *Document) SetRelease(target, product string, decl *ReleaseDecl) (bool, error) {
	m := &d.Releases
	if target != "" {
		t, ok := d.Target(target)
		if !ok {
			return false, refusal.New(refusal.NotFound, "no target named %s in the registry", target)
		}
		m = &t.Releases
	}
	old, had := (*m)[product]
	if decl == nil {
		if !had {
			return false, nil
		}
		delete(*m, product)
		if len(*m) == 0 {
			*m = nil
		}
		return true, nil
	}
	if had && old == *decl {
		return false, nil
	}
	if *m == nil {
		*m = map[string]ReleaseDecl{}
	}
	(*m)[product] = *decl
	return true, nil
}

// DeclaredVersions returns every version declared for product anywhere in
// the document (top level and every target), sorted, each once.
func (d *Document) DeclaredVersions(product string) []string {
	seen := map[string]bool{}
	if r, ok := d.Releases[product]; ok {
		seen[r.Version] = true
	}
	for i := range d.Targets {
		if r, ok := d.Targets[i].Releases[product]; ok {
			seen[r.Version] = true
		}
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// releases checks one releases map at path p ("releases",
// "targets[2].releases"), in product order.
func (v *validator) releases(m map[string]ReleaseDecl, p string) {
	products := make([]string, 0, len(m))
	for k := range m {
		products = append(products, k)
	}
	sort.Strings(products)
	for _, prod := range products {
		pp := p + "." + prod
		if msg := ReleaseProductProblem(prod); msg != "" {
			v.add(pp, "%s", msg)
		}
		if msg := ReleaseVersionProblem(m[prod].Version); msg != "" {
			v.add(pp+".version", "%s", msg)
		}
	}
}

func cloneReleases(m map[string]ReleaseDecl) map[string]ReleaseDecl {
	if m == nil {
		return nil
	}
	c := make(map[string]ReleaseDecl, len(m))
	for k, r := range m {
		c[k] = r
	}
	return c
}

// releasesChanged lists the products whose declaration differs between a
// and b, prefixed with "TARGET/" when prefix is a target name.
func releasesChanged(a, b map[string]ReleaseDecl, prefix string) []string {
	var out []string
	for k, r := range b {
		if o, ok := a[k]; !ok || o != r {
			out = append(out, prefix+k)
		}
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			out = append(out, prefix+k)
		}
	}
	sort.Strings(out)
	return out
}
