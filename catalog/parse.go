package catalog

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/wisent/stado/declaration"
	"github.com/wisent/stado/registry"
)

var (
	// entryName is the grammar of product and repair-step names: a
	// lowercase DNS label, so a name never looks like a unit identity.
	entryName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$`)
)

var (
	topFields     = []string{"version", "products", "recovery", "steps"}
	productFields = []string{"name", "description", "source", "units", "program", "args", "env", "port", "answering", "settings", "drain"}
	unitFields    = []string{"systemd", "launchd"}
	envFields     = []string{"name", "default", "description"}
	stepFields    = []string{"description", "needs", "linux", "darwin"}
	payloadFields = []string{"argv", "env", "timeout_seconds"}
)

// Parse reads a site catalog document (YAML or JSON) named source and
// checks every rule that the document can break on its own: the grammar of
// names and unit identities, absolute programs, answering declarations,
// repair payloads, unknown or repeated fields. It returns a fragment: a
// *Catalog holding only the document's entries, to be merged with Extend.
// Whether answering repair steps exist, and whether unit identities clash
// with other products, is checked by Extend against the merged catalog.
// Errors: a *registry.ValidationError (Source = source) carrying every
// violation at its field path ("products[2].answering.method").
func Parse(data []byte, source string) (*Catalog, error) {
	return parse(data, source, OriginSite)
}

func parse(data []byte, source, origin string) (*Catalog, error) {
	frag, vs := parseFragment(data, source, origin)
	if len(vs) > 0 {
		return nil, &registry.ValidationError{Source: source, Violations: vs}
	}
	return frag, nil
}

// parseFragment returns the entries that passed every rule together with
// the violations of the others, so that a caller can still check the valid
// entries against the merged catalog and report everything at once.
func parseFragment(data []byte, source, origin string) (*Catalog, []registry.Violation) {
	c := &checker{}
	frag := newCatalog()
	frag.source = source
	root := parseNode(data, c)
	if root != nil {
		c.document(root, origin, frag)
	}
	return frag, c.out
}

func (c *checker) document(root *yaml.Node, origin string, frag *Catalog) {
	f := c.mapping(root, "", topFields...)
	if f == nil {
		return
	}
	if v, ok := f["version"]; !ok {
		c.add("version", root, "missing; must be 1")
	} else if n, ok := c.integer(v, "version"); ok {
		if n != 1 {
			c.add("version", v, "must be 1, got %d", n)
		}
		frag.version = n
	}
	if p, ok := f["products"]; ok && !isNull(p) {
		if items, ok := c.list(p, "products"); ok {
			names := map[string]string{}
			units := map[string]string{}
			for i, it := range items {
				pp := index("products", i)
				if prod := c.product(it, pp, SourceProduct, origin); prod != nil {
					if c.unique(prod, it, names, units) {
						frag.list = append(frag.list, prod)
					}
				}
			}
		}
	}
	if r, ok := f["recovery"]; ok && !isNull(r) {
		if origin != OriginShipped {
			c.add("recovery", r, "the recovery list is fixed by the shipped catalog; a site catalog cannot change it")
		} else if items, ok := c.list(r, "recovery"); ok {
			names := map[string]string{}
			units := map[string]string{}
			for i, it := range items {
				pp := index("recovery", i)
				if prod := c.product(it, pp, SourceRecovery, origin); prod != nil {
					if c.unique(prod, it, names, units) {
						frag.recovery = append(frag.recovery, prod)
					}
				}
			}
		}
	}
	if s, ok := f["steps"]; ok && !isNull(s) {
		keys, vals := c.entries(s, "steps")
		for i, k := range keys {
			sp := keyPath("steps", k.Value)
			if !entryName.MatchString(k.Value) {
				c.add(sp, k, "step name %q must be lowercase letters, digits and dashes (at most 64)", k.Value)
				continue
			}
			if st := c.step(vals[i], sp, k.Value, origin); st != nil {
				frag.steps[st.Name] = st
				frag.stepOrder = append(frag.stepOrder, st.Name)
			}
		}
	}
}

// unique reports a product whose name or unit identity repeats an earlier
// entry of the same list.
func (c *checker) unique(p *Product, n *yaml.Node, names, units map[string]string) bool {
	before := len(c.out)
	if prev, dup := names[p.Name]; dup {
		c.add(join(p.path, "name"), n, "product %q is already declared at %s", p.Name, prev)
	} else {
		names[p.Name] = p.path
	}
	for _, u := range []struct{ field, id string }{{"systemd", p.Units.Systemd}, {"launchd", p.Units.Launchd}} {
		if u.id == "" {
			continue
		}
		if prev, dup := units[u.id]; dup {
			c.add(p.path+".units."+u.field, n, "unit %q is already the identity of %s", u.id, prev)
		} else {
			units[u.id] = p.path
		}
	}
	return len(c.out) == before
}

// product validates one product (or recovery) entry.
func (c *checker) product(n *yaml.Node, p, wantSource, origin string) *Product {
	before := len(c.out)
	f := c.mapping(n, p, productFields...)
	if f == nil {
		return nil
	}
	prod := &Product{Source: wantSource, Origin: origin, path: p}
	if v, ok := f["name"]; !ok {
		c.add(join(p, "name"), n, "missing")
	} else if s, ok := c.str(v, join(p, "name")); ok {
		if !entryName.MatchString(s) {
			c.add(join(p, "name"), v, "%q must be lowercase letters, digits and dashes, starting and ending with a letter or digit (at most 64)", s)
		}
		prod.Name = s
	}
	if v, ok := f["description"]; ok {
		prod.Description, _ = c.str(v, join(p, "description"))
	}
	if v, ok := f["source"]; ok {
		if s, ok := c.str(v, join(p, "source")); ok && s != wantSource {
			list := "products"
			if wantSource == SourceRecovery {
				list = "recovery"
			}
			c.add(join(p, "source"), v, "must be %q in the %s list, got %q", wantSource, list, s)
		}
	}
	if v, ok := f["units"]; !ok {
		c.add(join(p, "units"), n, "missing; give the systemd unit, the launchd label or both")
	} else {
		c.units(v, join(p, "units"), &prod.Units)
	}
	if v, ok := f["program"]; !ok {
		c.add(join(p, "program"), n, "missing; must be an absolute path")
	} else if s, ok := c.str(v, join(p, "program")); ok {
		if why := absProblem(s); why != "" {
			c.add(join(p, "program"), v, "%s", why)
		}
		prod.Program = s
	}
	if v, ok := f["args"]; ok && !isNull(v) {
		if args, ok := c.strList(v, join(p, "args")); ok {
			for i, a := range args {
				if why := argProblem(a); why != "" {
					c.add(index(join(p, "args"), i), v.Content[i], "%s", why)
				}
			}
			prod.Args = args
		}
	}
	if v, ok := f["env"]; ok && !isNull(v) {
		prod.Env = c.envList(v, join(p, "env"))
	}
	if v, ok := f["port"]; ok {
		if port, ok := c.integer(v, join(p, "port")); ok {
			if port < 1 || port > 65535 {
				c.add(join(p, "port"), v, "must be between 1 and 65535, got %d", port)
			}
			prod.Port = port
		}
	}
	if v, ok := f["answering"]; ok && !isNull(v) {
		prod.Answering = c.answering(v, join(p, "answering"))
	}
	if v, ok := f["settings"]; ok && !isNull(v) {
		prod.Settings = c.settings(v, join(p, "settings"))
	}
	if v, ok := f["drain"]; ok && !isNull(v) {
		if s, ok := c.str(v, join(p, "drain")); ok {
			if !entryName.MatchString(s) {
				c.add(join(p, "drain"), v, "must name a repair step (lowercase letters, digits and dashes), got %q", s)
			}
			prod.Drain = s
		}
	}
	if len(c.out) > before {
		return nil
	}
	return prod
}

func (c *checker) units(n *yaml.Node, p string, u *Units) {
	f := c.mapping(n, p, unitFields...)
	if f == nil {
		return
	}
	if v, ok := f["systemd"]; ok {
		if s, ok := c.str(v, join(p, "systemd")); ok {
			if err := declaration.CheckServiceUnit(registry.OSLinux, s); err != nil {
				c.add(join(p, "systemd"), v, "%s", err)
			}
			u.Systemd = s
		}
	}
	if v, ok := f["launchd"]; ok {
		if s, ok := c.str(v, join(p, "launchd")); ok {
			if err := declaration.CheckServiceUnit(registry.OSDarwin, s); err != nil {
				c.add(join(p, "launchd"), v, "%s", err)
			}
			u.Launchd = s
		}
	}
	if len(f) == 0 {
		c.add(p, n, "give the systemd unit, the launchd label or both")
	}
}

// absProblem says why p is not an absolute, clean program path, or "".
func absProblem(p string) string {
	switch {
	case p == "":
		return "must be an absolute path, got an empty string"
	case strings.ContainsAny(p, "\x00\n\r"):
		return "must not contain NUL or newline"
	case !path.IsAbs(p):
		return fmt.Sprintf("must be an absolute path, got %q", p)
	case path.Clean(p) != p:
		return fmt.Sprintf("must be a clean absolute path (no //, . or ..), got %q", p)
	case strings.HasSuffix(p, "/"):
		return fmt.Sprintf("must name a file, got %q", p)
	}
	return ""
}

func argProblem(a string) string {
	if strings.ContainsAny(a, "\x00\n\r") {
		return "must not contain NUL or newline"
	}
	return ""
}

func valueProblem(v string) string {
	if strings.ContainsAny(v, "\x00\n\r") {
		return "value must not contain NUL or newline"
	}
	return ""
}

func (c *checker) envList(n *yaml.Node, p string) []EnvVar {
	items, ok := c.list(n, p)
	if !ok {
		return nil
	}
	var out []EnvVar
	seen := map[string]bool{}
	for i, it := range items {
		ip := index(p, i)
		f := c.mapping(it, ip, envFields...)
		if f == nil {
			continue
		}
		var e EnvVar
		if v, ok := f["name"]; !ok {
			c.add(join(ip, "name"), it, "missing")
		} else if s, ok := c.str(v, join(ip, "name")); ok {
			switch err := declaration.CheckEnvName(s); {
			case err != nil:
				c.add(join(ip, "name"), v, "%s", err)
			case seen[s]:
				c.add(join(ip, "name"), v, "%s is declared twice", s)
			}
			seen[s] = true
			e.Name = s
		}
		if v, ok := f["default"]; ok && !isNull(v) {
			if s, ok := c.str(v, join(ip, "default")); ok {
				if why := valueProblem(s); why != "" {
					c.add(join(ip, "default"), v, "%s", why)
				}
				e.Default = &s
			}
		}
		if v, ok := f["description"]; ok {
			e.Description, _ = c.str(v, join(ip, "description"))
		}
		out = append(out, e)
	}
	return out
}

func (c *checker) step(n *yaml.Node, p, name, origin string) *RepairStep {
	before := len(c.out)
	f := c.mapping(n, p, stepFields...)
	if f == nil {
		return nil
	}
	st := &RepairStep{Name: name, Origin: origin}
	if v, ok := f["description"]; ok {
		st.Description, _ = c.str(v, join(p, "description"))
	}
	if v, ok := f["needs"]; ok && !isNull(v) {
		if needs, ok := c.strList(v, join(p, "needs")); ok {
			seen := map[string]bool{}
			for i, s := range needs {
				ip := index(join(p, "needs"), i)
				switch err := declaration.CheckEnvName(s); {
				case err != nil:
					c.add(ip, v.Content[i], "%s", err)
				case declaration.ReservedEnvName(s):
					// needs come from the caller over the channel, which
					// refuses these names: a step needing one never runs.
					c.add(ip, v.Content[i], "%s may not be handed to a repair step by its caller", s)
				case seen[s]:
					c.add(ip, v.Content[i], "%s is needed twice", s)
				}
				seen[s] = true
			}
			st.Needs = needs
		}
	}
	if v, ok := f["linux"]; ok {
		st.Linux = c.payload(v, join(p, "linux"), st.Needs)
	}
	if v, ok := f["darwin"]; ok {
		st.Darwin = c.payload(v, join(p, "darwin"), st.Needs)
	}
	if _, l := f["linux"]; !l {
		if _, d := f["darwin"]; !d {
			c.add(p, n, "give a payload for linux, darwin or both")
		}
	}
	if len(c.out) > before {
		return nil
	}
	return st
}

func (c *checker) payload(n *yaml.Node, p string, needs []string) *Payload {
	f := c.mapping(n, p, payloadFields...)
	if f == nil {
		return nil
	}
	pl := &Payload{}
	if v, ok := f["argv"]; !ok {
		c.add(join(p, "argv"), n, "missing; must be a list whose first item is an absolute program")
	} else if argv, ok := c.strList(v, join(p, "argv")); ok {
		if len(argv) == 0 {
			c.add(join(p, "argv"), v, "must not be empty; the first item is an absolute program")
		}
		for i, a := range argv {
			ip := index(join(p, "argv"), i)
			if i == 0 {
				if why := absProblem(a); why != "" {
					c.add(ip, v.Content[i], "the program %s", why)
				}
			} else if why := argProblem(a); why != "" {
				c.add(ip, v.Content[i], "%s", why)
			}
		}
		pl.Argv = argv
	}
	if v, ok := f["env"]; ok && !isNull(v) {
		keys, vals := c.entries(v, join(p, "env"))
		pl.Env = map[string]string{}
		for i, k := range keys {
			kp := keyPath(join(p, "env"), k.Value)
			if err := declaration.CheckEnvName(k.Value); err != nil {
				c.add(kp, k, "%s", err)
				continue
			}
			if contains(needs, k.Value) {
				c.add(kp, k, "%s is needed from the caller; the payload must not also set it", k.Value)
				continue
			}
			if s, ok := c.str(vals[i], kp); ok {
				if why := valueProblem(s); why != "" {
					c.add(kp, vals[i], "%s", why)
				}
				pl.Env[k.Value] = s
			}
		}
	}
	if v, ok := f["timeout_seconds"]; !ok {
		c.add(join(p, "timeout_seconds"), n, "missing; must be a number of seconds greater than 0")
	} else if t, ok := c.integer(v, join(p, "timeout_seconds")); ok {
		if t <= 0 {
			c.add(join(p, "timeout_seconds"), v, "must be greater than 0, got %d", t)
		}
		pl.TimeoutSeconds = t
	}
	return pl
}
