package beacon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

// The read commands' queries: what `service list`, `service status`, `host
// health` and `registry doctor` read, select and refuse, as typed results
// the CLI prints. A query reads the store it is given and nothing else.

// Reading says how a query reads: the clock it judges beacons at, the
// staleness bound (0: each beacon's own), the validated-registry cache
// (nil: none) and the store's name as its user wrote it, credentials
// redacted (for the refusal of a store without a registry).
type Reading struct {
	Now        time.Time
	StaleAfter time.Duration
	Cache      *RegistryCache
	Store      string
}

// UserRegistryCache is where the read commands remember the registry they
// validated for the store storeURL names (RegistryCache says why the file
// is trusted): stado/ in the user's cache directory ($XDG_CACHE_HOME, else
// ~/.cache, or ~/Library/Caches on macOS); nil when neither names an
// absolute path. getenv reads the environment.
func UserRegistryCache(getenv func(string) string, storeURL string) *RegistryCache {
	dir := getenv("XDG_CACHE_HOME")
	if !filepath.IsAbs(dir) {
		home := getenv("HOME")
		if !filepath.IsAbs(home) {
			return nil
		}
		dir = filepath.Join(home, ".cache")
		if runtime.GOOS == "darwin" {
			dir = filepath.Join(home, "Library", "Caches")
		}
	}
	return &RegistryCache{Dir: filepath.Join(dir, "stado"), Store: storeURL}
}

// read joins the registry of st with its beacons as r says, with st's
// catalog (the shipped one when the store holds none), which says each
// row's source; a store without a registry is refused (not_found). targets, when not nil, is given the catalog and says which
// declared targets' beacons to read (Selection.Targets); the catalog is
// then read first.
func read(ctx context.Context, st store.Store, r Reading, sel Selection, targets func(*catalog.Catalog) func(*registry.Target) bool) (*View, *catalog.Catalog, error) {
	sel.Cache = r.Cache
	var cat *catalog.Catalog
	var err error
	if targets != nil {
		if cat, err = catalog.LoadOrShipped(ctx, st); err != nil {
			return nil, nil, err
		}
		sel.Targets = targets(cat)
	}
	v, err := LoadSelected(ctx, st, r.Now, r.StaleAfter, sel)
	if errors.Is(err, store.ErrNotFound) {
		// a mistyped URL, a store never pushed to: an empty table would
		// read as a fleet with nothing declared
		return nil, nil, &refusal.Error{Code: refusal.NotFound, Message: "store " + r.Store + " holds no registry",
			Hint: "check --store (or $STADO_STORE); to create a registry there: stado registry push FILE --store " + r.Store, Err: err}
	} else if err != nil {
		return nil, nil, err // an invalid stored document keeps its *registry.ValidationError
	}
	if cat == nil {
		if cat, err = catalog.LoadOrShipped(ctx, st); err != nil {
			return nil, nil, err
		}
	}
	return v, cat, nil
}

// SourcedRow is a row with the source its unit is managed from: registry,
// recovery (the fixed list the host repair step restarts, declared or not)
// or product (an undeclared unit a catalog product names); empty for an
// undeclared unit nothing names.
// It points at its row, so a fleet's rows are not copied again.
type SourcedRow struct {
	*Row
	Source string `json:"source,omitempty"`
}

// WithSources says each row's source, asking the catalog once per unit
// name (a fleet repeats a few units on every host).
func WithSources(cat *catalog.Catalog, rows []Row, declared bool) []SourcedRow {
	out := make([]SourcedRow, len(rows))
	sources := map[string]string{}
	for i := range rows {
		src, ok := sources[rows[i].Unit]
		if !ok {
			src = cat.SourceOf(rows[i].Unit, declared)
			sources[rows[i].Unit] = src
		}
		out[i] = SourcedRow{Row: &rows[i], Source: src}
	}
	return out
}

// SourcedTable is RowsTable with a SOURCE column before DETAIL.
func SourcedTable(rs []SourcedRow, undeclared bool) ([]string, [][]string) {
	plain := make([]Row, len(rs))
	for i, r := range rs {
		plain[i] = *r.Row
	}
	header, rows := RowsTable(plain, undeclared)
	at := len(header) - 1 // before DETAIL
	header = slices.Insert(header, at, "SOURCE")
	for i := range rows {
		rows[i] = slices.Insert(rows[i], at, cmp.Or(rs[i].Source, "-"))
	}
	return header, rows
}

// Addresses reports whether name addresses the row: its declaration's name
// or unit, or the catalog entry name selects (a product by its name or any
// of its unit identities, else a recovery list entry), so `stado`,
// `stado.service` and `com.wisent.stado` read the same rows.
func Addresses(cat *catalog.Catalog, name string, r Row) bool {
	if r.Unit == name || (r.Service != "" && r.Service == name) {
		return true
	}
	p, ok := cat.Entry(name)
	if !ok {
		return false
	}
	return (r.Product != "" && r.Product == p.Name) || (r.Service != "" && r.Service == p.Name) ||
		(r.Unit != "" && (r.Unit == p.Units.Systemd || r.Unit == p.Units.Launchd))
}

// Declares reports whether t declares a service name addresses.
func Declares(cat *catalog.Catalog, name string, t *registry.Target) bool {
	for _, s := range t.Services {
		if Addresses(cat, name, Row{Host: t.Name, Service: s.Name, Unit: s.Unit, Product: s.Product}) {
			return true
		}
	}
	return false
}

// hintUndeclared is the hint of a refusal to find a declaration.
const hintUndeclared = "stado service list --undeclared shows loaded units no declaration covers"

// noHost refuses a host neither the registry nor the beacons know.
func noHost(host string) error {
	return refusal.New(refusal.NotFound, "no host %q in the registry or the beacons", host)
}

// ListQuery is what `service list` asks: rows of one host or all
// (Host), of the declarations a name addresses (Service), only those
// needing attention (Problems), or the loaded units no declaration covers
// (Undeclared).
type ListQuery struct {
	Reading
	Host       string
	Service    string
	Problems   bool
	Undeclared bool
}

// ListResult is the answer to a ListQuery.
type ListResult struct {
	RegistryRevision int64        `json:"registry_revision"`
	At               time.Time    `json:"at"`
	Services         []SourcedRow `json:"services"`
	// StaleHosts (undeclared only) are the hosts whose units could not be
	// listed because they have no fresh beacon.
	StaleHosts []string `json:"stale_hosts,omitempty"`
}

// Unlisted is what the text form prints instead of an empty table when
// nothing was listed because beacons are stale; nil otherwise.
func (r *ListResult) Unlisted() []string {
	if len(r.Services) > 0 || len(r.StaleHosts) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("nothing to list: %d host(s) have no fresh beacon (%s)", len(r.StaleHosts), strings.Join(r.StaleHosts, ", ")),
		"hint: stado host health shows each beacon's age"}
}

// List answers q. Its filters choose the beacons to read before any is
// decoded: Host reads that host's beacon alone, and Service (without
// Undeclared) only the beacons of hosts declaring the service. Problems
// needs each row's verdict, so it filters after the join. A host or a
// service nothing knows is refused (not_found).
func List(ctx context.Context, st store.Store, q ListQuery) (*ListResult, error) {
	selected := false
	var targets func(*catalog.Catalog) func(*registry.Target) bool
	if q.Service != "" && !q.Undeclared {
		targets = func(cat *catalog.Catalog) func(*registry.Target) bool {
			return func(t *registry.Target) bool {
				ok := Declares(cat, q.Service, t)
				selected = selected || ok
				return ok
			}
		}
	}
	// a list joins declarations with beacons and reads nothing else of
	// the registry: with the registry's validation cached, only that is
	// decoded
	v, cat, err := read(ctx, st, q.Reading, Selection{Host: q.Host, RowsOnly: targets == nil}, targets)
	if err != nil {
		return nil, err
	}
	if q.Host != "" && !v.Declares(q.Host) && v.Beacons[q.Host] == nil {
		return nil, noHost(q.Host)
	}
	if q.Service != "" && !q.Undeclared && !selected {
		return nil, &refusal.Error{Code: refusal.NotFound, Message: fmt.Sprintf("no declaration of %s on %s", q.Service, cmp.Or(q.Host, "any host")),
			Hint: hintUndeclared}
	}
	rows, declared, stale := v.Rows(q.Host), true, []string(nil)
	if q.Undeclared {
		rows, declared, stale = v.Undeclared(q.Host), false, v.unfresh(q.Host)
	}
	if q.Service != "" || q.Problems {
		rows = slices.DeleteFunc(rows, func(r Row) bool {
			return (q.Service != "" && !Addresses(cat, q.Service, r)) || (q.Problems && !r.Problem())
		})
	}
	return &ListResult{RegistryRevision: v.Meta.Revision, At: v.Now.UTC(), Services: WithSources(cat, rows, declared), StaleHosts: stale}, nil
}

// StatusQuery is what `service status` asks: the rows Name addresses, on
// Host or every host; with Lines > 0 also each declaration's last log
// lines, which Logs reads (over the host's channel, which the read half
// never opens itself).
type StatusQuery struct {
	Reading
	Name  string
	Host  string
	Lines int
	Logs  func(ctx context.Context, t registry.Target, s registry.Service, lines int) ([]string, error)
}

// StatusEntry is one host's status of the service.
type StatusEntry struct {
	SourcedRow
	Logs     []string `json:"logs,omitempty"`
	LogsRead string   `json:"logs_refusal,omitempty"`
	LogsHint string   `json:"logs_command,omitempty"`
}

// StatusResult is the answer to a StatusQuery.
type StatusResult struct {
	Service string        `json:"service"`
	Hosts   []StatusEntry `json:"hosts"`
}

// logsCommand is the command that reads a service's log on host.
func logsCommand(service, host string) string {
	return fmt.Sprintf("stado service logs %s --host %s --lines 100", service, host)
}

// Status answers q: the declarations Name addresses, else the undeclared
// loaded unit of the catalog entry Name selects; refused (not_found) when
// neither is found. A log read that fails is reported in its entry.
func Status(ctx context.Context, st store.Store, q StatusQuery) (*StatusResult, error) {
	v, cat, err := read(ctx, st, q.Reading, Selection{Host: q.Host}, nil)
	if err != nil {
		return nil, err
	}
	res := &StatusResult{Service: q.Name}
	for _, r := range WithSources(cat, v.Rows(q.Host), true) {
		if !Addresses(cat, q.Name, *r.Row) {
			continue
		}
		e := StatusEntry{SourcedRow: r, LogsHint: logsCommand(r.Service, r.Host)}
		if q.Lines > 0 { // the row comes from this declaration
			t, _ := v.Document.Target(r.Host)
			s, _ := t.Service(r.Service)
			if e.Logs, err = q.Logs(ctx, *t, *s, q.Lines); err != nil {
				e.LogsRead = err.Error()
			}
		}
		res.Hosts = append(res.Hosts, e)
	}
	if len(res.Hosts) == 0 {
		// no declaration: a catalog entry's unit the beacons see loaded
		// (source product or recovery), addressable without a record
		for _, r := range WithSources(cat, v.Undeclared(q.Host), false) {
			if r.Source != "" && Addresses(cat, q.Name, *r.Row) {
				if p, ok := cat.Entry(q.Name); ok {
					r.Service = p.Name
				}
				res.Hosts = append(res.Hosts, StatusEntry{SourcedRow: r, LogsHint: logsCommand(q.Name, r.Host)})
			}
		}
	}
	if len(res.Hosts) == 0 {
		return nil, &refusal.Error{Code: refusal.NotFound, Message: fmt.Sprintf("%s is not a registry-managed service on %s", q.Name, cmp.Or(q.Host, "any host")),
			Hint: hintUndeclared}
	}
	return res, nil
}

// HealthResult is the answer of `host health`.
type HealthResult struct {
	At    time.Time    `json:"at"`
	Hosts []HostHealth `json:"hosts"`
}

// HealthOf reads the health of host, or of every host when host is empty;
// a host nothing knows is refused (not_found).
func HealthOf(ctx context.Context, st store.Store, r Reading, host string) (*HealthResult, error) {
	v, _, err := read(ctx, st, r, Selection{Host: host}, nil)
	if err != nil {
		return nil, err
	}
	res := &HealthResult{At: v.Now.UTC(), Hosts: v.Health(host)}
	if host != "" && len(res.Hosts) == 0 {
		return nil, noHost(host)
	}
	if res.Hosts == nil {
		res.Hosts = []HostHealth{}
	}
	return res, nil
}

// DoctorResult is the answer of `registry doctor`: OK when nothing needs
// attention.
type DoctorResult struct {
	RegistryRevision int64     `json:"registry_revision"`
	At               time.Time `json:"at"`
	OK               bool      `json:"ok"`
	Findings         []Finding `json:"findings"`
}

// DoctorOf diffs every host's declarations against its beacon, and names
// each declaration overriding a safety-relevant setting of its product
// (code product_setting_overridden).
func DoctorOf(ctx context.Context, st store.Store, r Reading) (*DoctorResult, error) {
	v, cat, err := read(ctx, st, r, Selection{}, nil)
	if err != nil {
		return nil, err
	}
	res := &DoctorResult{RegistryRevision: v.Meta.Revision, At: v.Now.UTC(), Findings: append(v.Doctor(), overrideFindings(cat, v.Document)...)}
	res.OK = len(res.Findings) == 0
	if res.OK {
		res.Findings = []Finding{}
	}
	return res, nil
}
