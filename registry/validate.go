package registry

import (
	"fmt"
	"net"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/wisent/stado/declaration"
)

var (
	lowerAlnum    = declaration.Chars("a-z0-9")
	lowerAlnumDsh = declaration.Chars("a-z0-9-")
	anyAlnum      = declaration.Chars("A-Za-z0-9")
	anyAlnumDsh   = declaration.Chars("A-Za-z0-9-")
	userFirst     = declaration.Chars("A-Za-z_")
	userRest      = declaration.Chars("A-Za-z0-9_.-")
	alertRest     = declaration.Chars("A-Za-z0-9_.-")
	digits        = declaration.Chars("0-9")
)

// label reports whether l is a DNS label of 1-63 bytes: inner bytes from
// inner, first and last from edge.
func label(l string, edge, inner *declaration.Charset) bool {
	return declaration.Grammar(l, edge, inner, 63) && edge[l[len(l)-1]]
}

func validDomain(d string) bool { return ValidLaunchdDomain(d) }

// ValidLaunchdDomain reports whether d is a launchd domain a target may
// declare (launchd_domain): "system", "gui/<uid>" or "user/<uid>".
func ValidLaunchdDomain(d string) bool {
	if d == "system" {
		return true
	}
	_, uid, ok := strings.Cut(d, "/")
	return ok && (strings.HasPrefix(d, "gui/") || strings.HasPrefix(d, "user/")) && declaration.Grammar(uid, digits, digits, 10)
}

func at(base, field string, i int) string { return base + "." + field + "[" + strconv.Itoa(i) + "]" }

// Validate checks every rule of the registry document and returns nil or
// a *ValidationError (unwrapping to ErrInvalid) carrying every violation,
// each at its exact field path, in document order. It never modifies d.
func Validate(d *Document) error {
	v := &validator{}
	v.document(d)
	if len(v.out) == 0 {
		return nil
	}
	return &ValidationError{Violations: v.out}
}

type validator struct{ out []Violation }

func (v *validator) add(path, format string, args ...any) {
	v.out = append(v.out, Violation{Path: path, Message: fmt.Sprintf(format, args...)})
}

// addService adds the violations of the service at path sp, which
// declaration reports relative to the service.
func (v *validator) addService(sp string, vs []declaration.Violation) {
	for _, x := range vs {
		if x.Path != "" {
			x.Path = sp + "." + x.Path
		} else {
			x.Path = sp
		}
		v.out = append(v.out, x)
	}
}

func (v *validator) document(d *Document) {
	if d == nil {
		v.add("(document)", "empty document")
		return
	}
	if d.Version != 1 {
		if d.Version == 0 {
			v.add("version", "missing; must be 1")
		} else {
			v.add("version", "must be 1, got %d", d.Version)
		}
	}
	if d.ServiceResolver.RefreshSeconds < 0 {
		v.add("service_resolver.refresh_seconds", "must be greater than 0, got %d", d.ServiceResolver.RefreshSeconds)
	}
	v.autonomy(&d.Autonomy)
	v.releases(d.Releases, "releases")
	perTarget, perLimits := v.targetsEach(d.Targets)
	targets := make(map[string]int, len(d.Targets))
	for i := range d.Targets {
		t := &d.Targets[i]
		p := "targets[" + strconv.Itoa(i) + "]"
		v.out = append(v.out, perTarget[i]...)
		if t.Name == "" {
			continue
		}
		if j, dup := targets[t.Name]; dup {
			v.add(p+".name", "duplicate target %q (first declared at targets[%d])", t.Name, j)
			continue
		}
		targets[t.Name] = i
	}
	type serviceHost struct{ service, host string }
	services := make(map[serviceHost]int, len(d.Directory))
	type hostPort struct {
		host string
		port int
	}
	bound := make(map[hostPort]int, len(d.Directory))
	for i := range d.Directory {
		e := &d.Directory[i]
		p := "directory[" + strconv.Itoa(i) + "]"
		switch {
		case e.Service == "":
			v.add(p+".service", "missing")
		case !declaration.ValidServiceName(e.Service):
			v.add(p+".service", "%q is not a service name (letters, digits, '_', '.', '@', '-'; at most 128)", e.Service)
		default:
			key := serviceHost{e.Service, e.Host}
			if j, dup := services[key]; dup {
				v.add(p+".service", "duplicate directory entry for %q on %q (first at directory[%d])", e.Service, e.Host, j)
			} else {
				services[key] = i
			}
		}
		if e.Address != "" && !validAddress(e.Address) {
			v.add(p+".address", "%q is neither an IP address nor a host name", e.Address)
		}
		ti, hostOK := targets[e.Host]
		switch {
		case e.Host == "":
			v.add(p+".host", "missing")
		case !hostOK:
			v.add(p+".host", "no target named %q", e.Host)
		case e.Service != "" && !declares(&d.Targets[ti], e.Service):
			v.add(p+".service", "target %q declares no service named %q (by name or product)", e.Host, e.Service)
		}
		if e.Port < 1 || e.Port > 65535 {
			v.add(p+".port", "must be 1-65535, got %d", e.Port)
		} else if hostOK {
			key := hostPort{e.Host, e.Port}
			if j, dup := bound[key]; dup {
				v.add(p+".port", "port %d on %q is already bound by directory[%d]", e.Port, e.Host, j)
			} else {
				bound[key] = i
			}
		}
		seen := map[string]bool{}
		for k, c := range e.Callers {
			cp := at(p, "callers", k)
			switch {
			case c == "":
				v.add(cp, "empty caller")
			case seen[c]:
				v.add(cp, "duplicate caller %q", c)
			default:
				if _, ok := targets[c]; !ok {
					v.add(cp, "no target named %q", c)
				}
			}
			seen[c] = true
		}
	}
	v.documentLimits(d, perLimits) // validate_limits.go
}

// targetsEach checks every target on its own: its fields and services
// (target) and its limits (targetLimits), giving each target's violations
// in document order. A fleet-size document is split among the processors
// the process may use; every read of the stored registry validates it.
func (v *validator) targetsEach(ts []Target) (perTarget, perLimits [][]Violation) {
	perTarget, perLimits = make([][]Violation, len(ts)), make([][]Violation, len(ts))
	check := func(from, to int) {
		w := &validator{}
		for i := from; i < to; i++ {
			p := "targets[" + strconv.Itoa(i) + "]"
			w.out = nil
			w.target(&ts[i], p)
			perTarget[i] = w.out
			w.out = nil
			w.targetLimits(&ts[i], p)
			perLimits[i] = w.out
		}
	}
	workers := min(runtime.GOMAXPROCS(0), len(ts)/64)
	if workers < 2 {
		check(0, len(ts))
		return perTarget, perLimits
	}
	var wg sync.WaitGroup
	for k := 0; k < workers; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			check(k*len(ts)/workers, (k+1)*len(ts)/workers)
		}()
	}
	wg.Wait()
	return perTarget, perLimits
}

// declares reports whether t declares a service named name, or of product name.
func declares(t *Target, name string) bool {
	for _, s := range t.Services {
		if s.Name == name || s.Product == name {
			return true
		}
	}
	return false
}

// ValidTargetName reports whether name is a lowercase host name: labels of
// letters, digits and '-' joined by '.', at most 253 bytes.
func ValidTargetName(name string) bool {
	if name == "" || len(name) > 253 {
		return false
	}
	return declaration.Dotted(name, func(l string) bool { return label(l, lowerAlnum, lowerAlnumDsh) })
}

func validAddress(a string) bool {
	if net.ParseIP(a) != nil {
		return true
	}
	if len(a) > 253 {
		return false
	}
	return declaration.Dotted(a, func(l string) bool { return label(l, anyAlnum, anyAlnumDsh) })
}

func (v *validator) target(t *Target, p string) {
	switch {
	case t.Name == "":
		v.add(p+".name", "missing")
	case !ValidTargetName(t.Name):
		v.add(p+".name", "%q is not a lowercase host name (letters, digits, '-', dot-separated labels)", t.Name)
	}
	if t.SSH.Address != "" && !validAddress(t.SSH.Address) {
		v.add(p+".ssh.address", "%q is neither an IP address nor a host name", t.SSH.Address)
	}
	if t.SSH.Port < 0 || t.SSH.Port > 65535 {
		v.add(p+".ssh.port", "must be 1-65535, got %d", t.SSH.Port)
	}
	if t.SSH.User != "" && !declaration.Grammar(t.SSH.User, userFirst, userRest, 32) {
		v.add(p+".ssh.user", "%q is not a user name (letter or '_' first, then letters, digits, '_', '.', '-'; at most 32)", t.SSH.User)
	}
	switch t.OS {
	case OSLinux, OSDarwin:
	case "":
		v.add(p+".os", "missing; must be linux or darwin")
	default:
		v.add(p+".os", "must be linux or darwin, got %q", t.OS)
	}
	if t.LaunchdDomain != "" {
		switch {
		case t.OS != OSDarwin:
			v.add(p+".launchd_domain", "only allowed when os is darwin")
		case !validDomain(t.LaunchdDomain):
			v.add(p+".launchd_domain", "must be system, gui/<uid> or user/<uid>, got %q", t.LaunchdDomain)
		}
	}
	v.releases(t.Releases, p+".releases")
	alerts := map[string]int{}
	for i := range t.Alerts {
		v.alert(&t.Alerts[i], at(p, "alerts", i), alerts, i)
	}
	names := make(map[string]int, len(t.Services))
	units := make(map[string]int, len(t.Services))
	products := map[string]int{}
	for i := range t.Services {
		s := &t.Services[i]
		sp := at(p, "services", i)
		v.addService(sp, declaration.CheckRules(s, t.OS))
		if s.Name != "" {
			if j, dup := names[s.Name]; dup {
				v.add(sp+".name", "duplicate service %q on this target (first at %s.services[%d])", s.Name, p, j)
			} else {
				names[s.Name] = i
			}
		}
		if s.Unit != "" {
			if j, dup := units[s.Unit]; dup {
				v.add(sp+".unit", "unit %q is already declared by %s.services[%d]", s.Unit, p, j)
			} else {
				units[s.Unit] = i
			}
		}
		// A product is one process per host: a second declaration of it,
		// in either scope, would run a second copy beside the first.
		if s.Product != "" {
			if j, dup := products[s.Product]; dup {
				v.add(sp+".product", "product %q is already declared by %s.services[%d]; a product runs once per host", s.Product, p, j)
			} else {
				products[s.Product] = i
			}
		}
	}
}

func (v *validator) alert(a *AlertChannel, p string, names map[string]int, i int) {
	switch {
	case a.Name == "":
		v.add(p+".name", "missing")
	case !declaration.Grammar(a.Name, anyAlnum, alertRest, 64):
		v.add(p+".name", "%q is not a channel name (letters, digits, '_', '.', '-'; at most 64)", a.Name)
	default:
		if j, dup := names[a.Name]; dup {
			v.add(p+".name", "duplicate alert channel %q (first at index %d)", a.Name, j)
		} else {
			names[a.Name] = i
		}
	}
	switch {
	case a.Webhook == nil && a.Command == nil:
		v.add(p, "needs exactly one of webhook or command, has neither")
	case a.Webhook != nil && a.Command != nil:
		v.add(p, "needs exactly one of webhook or command, has both")
	case a.Webhook != nil:
		u, err := url.Parse(a.Webhook.URL)
		switch {
		case a.Webhook.URL == "":
			v.add(p+".webhook.url", "missing")
		case err != nil:
			v.add(p+".webhook.url", "not a URL: %v", stripURLErr(err))
		case u.Scheme != "http" && u.Scheme != "https":
			v.add(p+".webhook.url", "scheme must be http or https, got %q", u.Scheme)
		case u.Host == "" || u.Hostname() == "":
			v.add(p+".webhook.url", "has no host")
		}
	case a.Command != nil:
		if len(a.Command.Argv) == 0 {
			v.add(p+".command.argv", "missing; argv[0] is the absolute program")
			break
		}
		if msg := declaration.PathProblem(a.Command.Argv[0]); msg != "" {
			v.add(p+".command.argv[0]", "%s", msg)
		}
		for k, arg := range a.Command.Argv[1:] {
			if msg := declaration.ArgProblem(arg); msg != "" {
				v.add(fmt.Sprintf("%s.command.argv[%d]", p, k+1), "%s", msg)
			}
		}
	}
}

func stripURLErr(err error) string {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err.Error()
	}
	return err.Error()
}
