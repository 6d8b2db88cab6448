package resolver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

// URIPrefix starts every service URI: stado://service/<name>.
const URIPrefix = "stado://service/"

// ErrBadURI is returned for a string that is not stado://service/<name>.
var ErrBadURI = errors.New("not a stado://service/<name> URI")

// ParseURI returns the service name of a stado://service/<name> URI. The
// name must be one path segment. Errors wrap ErrBadURI.
func ParseURI(uri string) (string, error) {
	name, ok := strings.CutPrefix(uri, URIPrefix)
	if !ok || name == "" || strings.ContainsAny(name, "/?#") {
		return "", fmt.Errorf("%q: %w", uri, ErrBadURI)
	}
	return name, nil
}

// Endpoint is where a service answers, as the directory says.
type Endpoint struct {
	Service string `json:"service"`
	// Host is the registry target that serves it: the one entry the
	// resolver chose among the service's entries.
	Host string `json:"host"`
	// Address is the entry's own address, else the target's ssh address,
	// else its name.
	Address string `json:"address"`
	Port    int    `json:"port"`
	// Choice says why this entry was chosen: ChoiceOwnHost,
	// ChoiceAnswering or ChoiceDirectory.
	Choice string `json:"choice,omitempty"`
}

// Why an entry was chosen among a service's directory entries.
const (
	// ChoiceOwnHost: the entry is on the calling host.
	ChoiceOwnHost = "own_host"
	// ChoiceAnswering: the entry's host has a fresh beacon whose answering
	// verdict for the service is successful.
	ChoiceAnswering = "answering"
	// ChoiceDirectory: neither; the first such entry in directory order.
	ChoiceDirectory = "directory"
)

// Answers says whether host's beacon is fresh and reads service's answering
// verdict as successful. It is the evidence the resolver ranks a service's
// hosts by (the CLI builds it with package beacon's reader).
type Answers func(service, host string) bool

// String is address:port, ready to dial.
func (e Endpoint) String() string { return net.JoinHostPort(e.Address, strconv.Itoa(e.Port)) }

// NotInDirectoryError says the directory has no entry for a service. It
// unwraps to store.ErrNotFound.
type NotInDirectoryError struct{ Service string }

func (e *NotInDirectoryError) Error() string {
	return fmt.Sprintf("the directory has no entry for service %q", e.Service)
}
func (e *NotInDirectoryError) Unwrap() error             { return store.ErrNotFound }
func (e *NotInDirectoryError) RefusalCode() refusal.Code { return refusal.NotFound }

// CallerRefusedError says the directory lists who may call a service and
// the calling host is not among them.
type CallerRefusedError struct {
	Service string
	Caller  string // "" when the resolver was given no caller name
	Callers []string
}

func (e *CallerRefusedError) Error() string {
	who := fmt.Sprintf("host %q", e.Caller)
	if e.Caller == "" {
		who = "an unnamed caller"
	}
	return fmt.Sprintf("%s may not call service %q: the directory allows only %s", who, e.Service, strings.Join(e.Callers, ", "))
}
func (e *CallerRefusedError) RefusalCode() refusal.Code { return refusal.CallerNotAllowed }

// NoPortError says the directory entry records no port.
type NoPortError struct{ Service, Host string }

func (e *NoPortError) Error() string {
	return fmt.Sprintf("the directory records no port for service %q on %s", e.Service, e.Host)
}
func (e *NoPortError) RefusalCode() refusal.Code { return refusal.Unreadable }

// FromStore returns a loader reading the registry document from st.
func FromStore(st store.Store) func(context.Context) (*registry.Document, error) {
	return func(ctx context.Context) (*registry.Document, error) {
		doc, _, err := registry.Load(ctx, st)
		return doc, err
	}
}

// Resolver resolves service names through the registry directory on
// behalf of one calling host. It keeps the document it read for the
// fleet's service_resolver.refresh_seconds; with no interval declared it
// reads the registry on every call. A refresh that fails keeps the last
// document for another interval. Safe for concurrent use.
type Resolver struct {
	// Load reads the registry document (FromStore, or a fixed document).
	Load func(context.Context) (*registry.Document, error)
	// Caller is the registry target this resolver calls from; it must be
	// listed by a service whose directory entry lists callers.
	Caller string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// LoadAnswers reads the beacons' evidence whenever the document is
	// read; nil (or a read that fails before any succeeded) means no host
	// is known to answer. A failed read keeps the last evidence.
	LoadAnswers func(context.Context) (Answers, error)

	mu      sync.Mutex
	doc     *registry.Document
	answers Answers
	expires time.Time
}

func (r *Resolver) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Document returns the registry document the resolver applies, reading
// it when the cached one has expired.
func (r *Resolver) Document(ctx context.Context) (*registry.Document, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if r.doc != nil && now.Before(r.expires) {
		return r.doc, nil
	}
	doc, err := r.Load(ctx)
	if err != nil {
		if r.doc != nil {
			r.expires = now.Add(refresh(r.doc))
			return r.doc, nil
		}
		return nil, fmt.Errorf("read the directory: %w", err)
	}
	if r.LoadAnswers != nil {
		if a, err := r.LoadAnswers(ctx); err == nil {
			r.answers = a
		}
	}
	r.doc = doc
	r.expires = now.Add(refresh(doc))
	return doc, nil
}

// evidence is the answers read with the current document; nil when none.
func (r *Resolver) evidence() Answers {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.answers
}

func refresh(d *registry.Document) time.Duration {
	return time.Duration(d.ServiceResolver.RefreshSeconds) * time.Second
}

// RefreshSeconds is the refresh interval of the last document read (also
// the bound after which a held request stands); 0 when none was read or
// none is declared.
func (r *Resolver) RefreshSeconds() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.doc == nil {
		return 0
	}
	return r.doc.ServiceResolver.RefreshSeconds
}

// Resolve returns the endpoint of a service named by name or by its
// stado://service/<name> URI. Errors: *NotInDirectoryError (no entry),
// *CallerRefusedError (the caller is not listed), *NoPortError, an error
// wrapping ErrBadURI, or the loader's error when no document was ever read.
func (r *Resolver) Resolve(ctx context.Context, name string) (Endpoint, error) {
	if strings.Contains(name, "://") || name == "" {
		n, err := ParseURI(name)
		if err != nil {
			return Endpoint{}, err
		}
		name = n
	}
	doc, err := r.Document(ctx)
	if err != nil {
		return Endpoint{}, err
	}
	return choose(doc, name, r.Caller, r.evidence())
}

// resolveIn resolves without beacon evidence.
func resolveIn(doc *registry.Document, name, caller string) (Endpoint, error) {
	return choose(doc, name, caller, nil)
}

// choose picks one of name's directory entries for caller. Only entries
// the caller may call and that record a port are candidates; among them,
// in this order:
//
//  1. the entry on the caller's own host;
//  2. the first entry (in directory order) whose host's beacon is fresh and
//     reads the service's answering verdict as successful (answers);
//  3. the first remaining entry in directory order.
//
// Errors: *NotInDirectoryError when there is no entry; when no entry is a
// candidate, *CallerRefusedError if the caller may call none of them (naming
// the callers of the first), else *NoPortError (naming the first host the
// caller may call).
func choose(doc *registry.Document, name, caller string, answers Answers) (Endpoint, error) {
	entries := doc.DirectoryEntries(name)
	if len(entries) == 0 {
		return Endpoint{}, &NotInDirectoryError{Service: name}
	}
	var candidates []*registry.DirectoryEntry
	var noPort *registry.DirectoryEntry
	for _, e := range entries {
		switch {
		case len(e.Callers) > 0 && (caller == "" || !slices.Contains(e.Callers, caller)):
		case e.Port <= 0:
			if noPort == nil {
				noPort = e
			}
		default:
			candidates = append(candidates, e)
		}
	}
	if len(candidates) == 0 {
		if noPort != nil {
			return Endpoint{}, &NoPortError{Service: name, Host: noPort.Host}
		}
		return Endpoint{}, &CallerRefusedError{Service: name, Caller: caller, Callers: slices.Clone(entries[0].Callers)}
	}
	chosen, why := candidates[0], ChoiceDirectory
	if i := slices.IndexFunc(candidates, func(e *registry.DirectoryEntry) bool { return caller != "" && e.Host == caller }); i >= 0 {
		chosen, why = candidates[i], ChoiceOwnHost
	} else if answers != nil {
		if i := slices.IndexFunc(candidates, func(e *registry.DirectoryEntry) bool { return answers(name, e.Host) }); i >= 0 {
			chosen, why = candidates[i], ChoiceAnswering
		}
	}
	return Endpoint{Service: name, Host: chosen.Host, Address: doc.ListenAddress(chosen), Port: chosen.Port, Choice: why}, nil
}
