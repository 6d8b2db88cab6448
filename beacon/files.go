package beacon

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/declaration"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/units"
)

// UnitFiles compares, each pass, every declared unit's file on this host
// with what its declaration renders here: the rendering ensure installs
// (units.CompareInstalled over the declaration with its product's site
// settings merged, as the host channel's ensure merges them). It reads
// files and changes nothing. Its findings are each unit report's File, so
// the read half and the autonomy cycle know of drift without a connection
// to the host.
type UnitFiles struct {
	// GOOS is the OS rendered for; "" means runtime.GOOS.
	GOOS string
	// Home returns the home of the target's scope owner (units.ScopeOwner),
	// which places user-scope unit files and launchd log paths, as it is the
	// login user's home of the channel ensure installs through. nil looks
	// the account up (units.LookupAccount).
	Home func(user string) (string, error)
	// Catalog loads the site catalog whose product settings ensure merges;
	// it is read once in a pass that declares a product. nil means the
	// shipped catalog.
	Catalog func(ctx context.Context) (*catalog.Catalog, error)
	// CheckPath refuses a unit file path the host would not install to;
	// such a unit is not compared (its file is never read). nil means
	// declaration.CheckUnitPath, and for a user-scope unit a path below the
	// scope owner's home, as the host channel holds ensure to.
	CheckPath func(s registry.Service, goos, path, home string) error

	// render is units.Render unless a test counts the renderings.
	render func(s registry.Service, goos, home string) ([]byte, error)
	// renders keeps each declaration's rendering, by service name, while
	// the pass's document (one per registry revision) stands.
	renders   map[string]kept
	rendersOf *registry.Document
}

// kept is one declaration's rendering and what it was rendered from
// besides the document: a product's site catalog (read each pass) and
// the home.
type kept struct {
	cat     *catalog.Catalog
	home    string
	content []byte
	err     error
}

// rendering returns s's rendering, rendered again only when the catalog
// or the home it depends on is not the one it was kept with.
func (f *UnitFiles) rendering(s registry.Service, goos, home string, cat *catalog.Catalog) ([]byte, error) {
	if k, ok := f.renders[s.Name]; ok && k.home == home && (s.Product == "" || k.cat == cat) {
		return k.content, k.err
	}
	render := f.render
	if render == nil {
		render = units.Render
	}
	content, err := render(s, goos, home)
	f.renders[s.Name] = kept{cat: cat, home: home, content: content, err: err}
	return content, err
}

// checkPath is ensure's rule for where a unit file may be.
func checkPath(s registry.Service, goos, path, home string) error {
	if err := declaration.CheckUnitPath(goos, s.EffectiveScope(), s.Unit, path); err != nil {
		return err
	}
	if s.EffectiveScope() == declaration.ScopeUser {
		h := filepath.Clean(home)
		if h == "/" || h == "." || !strings.HasPrefix(filepath.Clean(path), h+"/") {
			return fmt.Errorf("user unit path %s is not below the owner's home %s", path, home)
		}
	}
	return nil
}

func (f *UnitFiles) goos() string {
	if f.GOOS != "" {
		return f.GOOS
	}
	return runtime.GOOS
}

// Check sets the File of every declared unit's report of p.
func (f *UnitFiles) Check(ctx context.Context, p *Pass) {
	if p.Target == nil {
		return
	}
	goos := f.goos()
	if p.Document == nil || p.Document != f.rendersOf {
		f.renders, f.rendersOf = map[string]kept{}, p.Document
	}
	var (
		cat     *catalog.Catalog
		catRead bool
		home    string
		homeErr error
		homeSet bool
	)
	for _, s := range p.Target.Services {
		rep := p.Unit(s.Name)
		if rep == nil {
			continue
		}
		if s.Product != "" && !catRead {
			catRead = true
			if f.Catalog != nil {
				if c, err := f.Catalog(ctx); err == nil {
					cat = c
				}
			}
		}
		if cat != nil && s.Product != "" {
			s = cat.WithProductSettings(s, goos)
		}
		if needsHome(s, goos) && !homeSet {
			homeSet = true
			home, homeErr = f.home(units.ScopeOwner(*p.Target))
		}
		if needsHome(s, goos) && homeErr != nil {
			rep.File = &FileCheck{Path: s.UnitPath, Uncompared: true, Reason: "the scope owner's home is not known: " + homeErr.Error()}
			continue
		}
		path := units.UnitPath(s, goos, home)
		check := f.CheckPath
		if check == nil {
			check = checkPath
		}
		if err := check(s, goos, path, home); err != nil {
			rep.File = &FileCheck{Path: path, Uncompared: true, Reason: "not read: " + err.Error()}
			continue
		}
		rep.File = compareFile(s, goos, home, func() ([]byte, error) { return f.rendering(s, goos, home, cat) })
	}
}

func (f *UnitFiles) home(user string) (string, error) {
	if f.Home != nil {
		return f.Home(user)
	}
	a, err := units.LookupAccount(user)
	return a.Home, err
}

// needsHome: a user-scope unit file lies in its owner's home, and a
// launchd job's log path too.
func needsHome(s registry.Service, goos string) bool {
	return goos == declaration.OSDarwin || s.EffectiveScope() == declaration.ScopeUser
}

// compareFile is one declaration's FileCheck.
func compareFile(s registry.Service, goos, home string, render func() ([]byte, error)) *FileCheck {
	in, err := units.CompareRendered(s, goos, home, render)
	fc := &FileCheck{Path: in.Path, Drift: in.Drift, Absent: in.Absent}
	var inc *units.IncompleteError
	switch {
	case in.Absent:
		fc.Reason = "no unit file"
	case errors.As(err, &inc):
		fc.Drift, fc.Uncompared, fc.Reason = false, true, "the declaration is incomplete: it renders nothing to compare"
	case err != nil:
		fc.Drift, fc.Uncompared, fc.Reason = false, true, err.Error()
	case in.Drift:
		fc.Reason = fmt.Sprintf("the installed bytes differ from the rendering from line %d", firstDifferentLine(in.Installed, in.Rendered))
	}
	return fc
}

// firstDifferentLine is the 1-based line where a and b first differ.
func firstDifferentLine(a, b []byte) int {
	line := 1
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return line
		}
		if a[i] == '\n' {
			line++
		}
	}
	return line
}
