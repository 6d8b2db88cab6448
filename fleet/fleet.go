// Package fleet is stado's write half: ensure, adopt, retire, remove,
// restart, converge (with the blast-radius caps it shares with the autonomy
// cycle), logs, env and the unit reads, as functions over the registry
// store, the catalog and a channel.Connector (the Host of each target). It
// decides what to do from the declarations, asks each host once per
// operation where it can, changes declarations only through the registry's
// compare-and-swap, and returns typed results with every host's outcome. The
// CLI prints them; the autonomy cycle and the desktop page call the same
// functions.
//
// fleet imports channel (the Host interface, its typed requests and
// results, RemoteError and the fan-out) and never channel/sshclient: hosts
// come through the Connector its caller builds, which fleet names for its
// callers, so fleet and everything above it link no SSH library. It also
// imports register (the recovery rows a host's register holds), units,
// catalog, declaration, registry, store and refusal. It must not import cli,
// repair or beacon. Above it, autonomy and desktop reach hosts only through
// fleet and never import channel. The name says what it acts on: the
// fleet's hosts, as declared.
package fleet

import (
	"github.com/wisent/stado/declaration"

	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

// Connector returns a target's Host: how the write half reaches each host
// (the SSH client's Host through a pool, or an in-process one in tests).
// It is channel's type, named here so that fleet's callers (the autonomy
// cycle, the desktop page) hand one over without importing channel.
type Connector = channel.Connector

// MaxLogLines is the most log lines one read returns.
const MaxLogLines = channel.MaxLogLines

// Fleet is one command's view of the fleet: the registry document as read
// at Meta's revision, the catalog, the store to write declarations to, and
// how to reach a target's host.
type Fleet struct {
	Store   store.Store
	Doc     *registry.Document
	Meta    store.Meta
	Catalog *catalog.Catalog
	// Connect returns a target's Host; nil refuses every host operation.
	Connect Connector
	// Parallel bounds how many hosts are acted on at once; <= 0 means
	// channel.DefaultParallel.
	Parallel int
}

// Open reads the registry (an empty store is an empty document) and the
// catalog of st. Errors are the store's.
func Open(ctx context.Context, st store.Store, connect channel.Connector) (*Fleet, error) {
	doc, meta, err := registry.Load(ctx, st)
	if errors.Is(err, store.ErrNotFound) {
		doc, meta, err = &registry.Document{Version: 1}, store.Meta{}, nil
	}
	if err != nil {
		return nil, err
	}
	cat, err := catalog.Load(ctx, st)
	if err != nil {
		return nil, err
	}
	return &Fleet{Store: st, Doc: doc, Meta: meta, Catalog: cat, Connect: connect}, nil
}

func (f *Fleet) host(t registry.Target) (channel.Host, error) {
	if f.Connect == nil {
		return nil, refusal.New(refusal.NoManager, "no host channel to reach %s", t.Name)
	}
	return f.Connect(t), nil
}

// Target returns the registry target named host.
func (f *Fleet) Target(host string) (registry.Target, error) {
	if host == "" {
		return registry.Target{}, &refusal.Error{Code: refusal.Usage, Message: "--host HOST is required"}
	}
	t, ok := f.Doc.Target(host)
	if !ok {
		return registry.Target{}, refusal.New(refusal.NotFound, "no target %q in the registry", host)
	}
	return *t, nil
}

// NotManaged is the refusal for a name no declaration on host covers.
func NotManaged(name, host string) *refusal.Error {
	return &refusal.Error{Code: refusal.NotFound, Message: fmt.Sprintf("%s is not a registry-managed service on %s", name, host),
		Hint: fmt.Sprintf("stado service unit show %s --host %s reads a loaded unit without a declaration", name, host)}
}

// Declared returns host's declaration addressed by name or unit.
func (f *Fleet) Declared(host, name string) (registry.Target, registry.Service, error) {
	t, err := f.Target(host)
	if err != nil {
		return t, registry.Service{}, err
	}
	s, ok := declaredAs(f.Catalog, t, name) // name, unit, or the product it selects (sources.go)
	if !ok {
		return t, registry.Service{}, NotManaged(name, host)
	}
	return t, *s, nil
}

// declaring returns the targets declaring name (every one, or those named
// in hosts, each of which must declare it) with their declarations.
func (f *Fleet) declaring(name string, hosts []string) ([]registry.Target, map[string]registry.Service, error) {
	decl := map[string]registry.Service{}
	var targets []registry.Target
	add := func(t registry.Target) bool {
		s, ok := declaredAs(f.Catalog, t, name) // name, unit, or the product it selects (sources.go)
		if ok {
			targets = append(targets, t)
			decl[t.Name] = *s
		}
		return ok
	}
	if len(hosts) == 0 {
		for _, t := range f.Doc.Targets {
			add(t)
		}
		if len(targets) == 0 {
			return nil, nil, refusal.New(refusal.NotFound, "%s is not a registry-managed service on any target", name)
		}
		return targets, decl, nil
	}
	for _, h := range dedupe(hosts) {
		t, err := f.Target(h)
		if err != nil {
			return nil, nil, err
		}
		if !add(t) {
			return nil, nil, NotManaged(name, h)
		}
	}
	return targets, decl, nil
}

// fanOut runs do on every target, at most f.Parallel at once, and returns
// one outcome per target in input order with FanOutError of their errors.
// As each host completes, finish fills in what every outcome carries (host,
// ok, error; the outcome is zero when the context ended before the host
// started) and each, when not nil, gets it, one at a time.
func fanOut[T any](ctx context.Context, f *Fleet, what string, targets []registry.Target,
	do func(ctx context.Context, t registry.Target) (T, error),
	finish func(r *T, host string, err error), each func(T)) ([]T, error) {
	list := make([]T, len(targets))
	errs := map[string]error{}
	order := make([]string, len(targets))
	for i, t := range targets {
		order[i] = t.Name
	}
	channel.FanOut(ctx, targets, f.Parallel, func(ctx context.Context, t registry.Target) channel.Result {
		r, err := do(ctx, t)
		return channel.Result{Value: r, Err: err}
	}, func(res channel.Result) {
		r, _ := res.Value.(T)
		finish(&r, res.Host, res.Err)
		list[res.Index], errs[res.Host] = r, res.Err
		if each != nil {
			each(r)
		}
	})
	return list, FanOutError(what, errs, order)
}

func dedupe(hosts []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, h := range hosts {
		if !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	return out
}

// Reason is reason, or the formatted default when it is blank.
func Reason(reason, format string, args ...any) string {
	if strings.TrimSpace(reason) != "" {
		return reason
	}
	return fmt.Sprintf(format, args...)
}

// Mask is what a masked environment value or secret argument reads as.
const Mask = declaration.Mask

// MaskEnv is the one rule for showing a declaration's environment: every
// value is replaced by Mask unless show is set. nil stays nil.
func MaskEnv(env map[string]string, show bool) map[string]string {
	if env == nil {
		return nil
	}
	out := make(map[string]string, len(env))
	for k, v := range env {
		if show {
			out[k] = v
		} else {
			out[k] = Mask
		}
	}
	return out
}

// SortedKeys returns m's keys in order.
func SortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// withdraw removes host's declaration name from the registry; an absent one
// is the not_found refusal.
func (f *Fleet) withdraw(ctx context.Context, host, name, reason string) (int64, error) {
	_, meta, err := registry.Update(ctx, f.Store, reason, func(d *registry.Document) error {
		t, ok := d.Target(host)
		if !ok {
			return refusal.New(refusal.NotFound, "no target %q in the registry", host)
		}
		for i := range t.Services {
			if t.Services[i].Name == name {
				t.Services = append(t.Services[:i], t.Services[i+1:]...)
				dropDirectoryEntry(d, t, name)
				return nil
			}
		}
		return NotManaged(name, host)
	})
	return meta.Revision, err
}

// dropDirectoryEntry removes name's directory entry on t once no
// declaration of t is that service any more (by name or product): the
// service no longer answers there, and the registry refuses an entry for a
// service its host does not declare.
func dropDirectoryEntry(d *registry.Document, t *registry.Target, name string) {
	for _, s := range t.Services {
		if s.Name == name || s.Product == name {
			return
		}
	}
	d.Directory = slices.DeleteFunc(d.Directory, func(e registry.DirectoryEntry) bool { return e.Service == name && e.Host == t.Name })
}
