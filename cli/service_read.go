package cli

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/wisent/stado/refusal"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/register"
	"github.com/wisent/stado/registry"
)

func serviceReadCommands(env *Env) []*ucli.Command {
	return []*ucli.Command{
		newServiceListCommand(env),
		newServiceStatusCommand(env),
		newServiceRecoveriesCommand(env),
	}
}

func staleFlag() ucli.Flag {
	return &ucli.DurationFlag{Name: "stale-after", Usage: "distrust beacons older than this (default: each beacon's own bound, 3 × its interval)"}
}

// loadView joins the registry of the store the globals name with its
// beacons, judged at env.Now.
// With host set, it reads that host's beacon alone.
func loadView(ctx context.Context, env *Env, stale time.Duration, host string) (*beacon.View, error) {
	v, _, err := loadViewCatalog(ctx, env, beacon.Selection{Host: host}, stale, nil)
	return v, err
}

// loadViewCatalog is loadView with the store's catalog (the shipped one
// when the store holds none), which says each row's source. sel says which
// beacons to read; targets, when not nil, is given the catalog and says
// which declared targets' beacons to read (beacon.Selection.Targets), and
// the catalog is then read first.
func loadViewCatalog(ctx context.Context, env *Env, sel beacon.Selection, stale time.Duration, targets func(*catalog.Catalog) func(*registry.Target) bool) (*beacon.View, *catalog.Catalog, error) {
	st, err := openStore(ctx, env)
	if err != nil {
		return nil, nil, err
	}
	defer st.Close()
	sel.Cache = registryCache(env)
	var cat *catalog.Catalog
	if targets != nil {
		if cat, err = catalog.LoadOrShipped(ctx, st); err != nil {
			return nil, nil, err
		}
		sel.Targets = targets(cat)
	}
	v, err := beacon.LoadSelected(ctx, st, env.Now(), stale, sel)
	if err != nil {
		return nil, nil, viewRefusal(env, err)
	}
	if cat == nil {
		if cat, err = catalog.LoadOrShipped(ctx, st); err != nil {
			return nil, nil, err
		}
	}
	return v, cat, nil
}

// registryCache is where the read commands remember the registry they
// validated (beacon.RegistryCache, which says why the file is trusted):
// stado/ in the user's cache directory ($XDG_CACHE_HOME, else ~/.cache, or
// ~/Library/Caches on macOS); none when neither names an absolute path.
func registryCache(env *Env) *beacon.RegistryCache {
	dir := env.Getenv("XDG_CACHE_HOME")
	if !filepath.IsAbs(dir) {
		home := env.Getenv("HOME")
		if !filepath.IsAbs(home) {
			return nil
		}
		dir = filepath.Join(home, ".cache")
		if runtime.GOOS == "darwin" {
			dir = filepath.Join(home, "Library", "Caches")
		}
	}
	return &beacon.RegistryCache{Dir: filepath.Join(dir, "stado"), Store: env.StoreURL}
}

// sourcedRow is a row with the source its unit is managed from: registry,
// recovery (the fixed list the host repair step restarts, declared or not)
// or product (an undeclared unit a catalog product names); empty for an
// undeclared unit nothing names.
// It points at its row, so a fleet's rows are not copied again.
type sourcedRow struct {
	*beacon.Row
	Source string `json:"source,omitempty"`
}

// withSources says each row's source, asking the catalog once per unit
// name (a fleet repeats a few units on every host).
func withSources(cat *catalog.Catalog, rows []beacon.Row, declared bool) []sourcedRow {
	out := make([]sourcedRow, len(rows))
	sources := map[string]string{}
	for i := range rows {
		src, ok := sources[rows[i].Unit]
		if !ok {
			src = cat.SourceOf(rows[i].Unit, declared)
			sources[rows[i].Unit] = src
		}
		out[i] = sourcedRow{Row: &rows[i], Source: src}
	}
	return out
}

// sourcedTable is beacon.RowsTable with a SOURCE column before DETAIL.
func sourcedTable(rs []sourcedRow, undeclared bool) ([]string, [][]string) {
	plain := make([]beacon.Row, len(rs))
	for i, r := range rs {
		plain[i] = *r.Row
	}
	header, rows := beacon.RowsTable(plain, undeclared)
	at := len(header) - 1 // before DETAIL
	header = slices.Insert(header, at, "SOURCE")
	for i := range rows {
		rows[i] = slices.Insert(rows[i], at, cmp.Or(rs[i].Source, "-"))
	}
	return header, rows
}

// addresses reports whether name addresses the row: its declaration's name
// or unit, or the catalog entry name selects (a product by its name or any
// of its unit identities, else a recovery list entry), so `stado`,
// `stado.service` and `com.wisent.stado` read the same rows.
func addresses(cat *catalog.Catalog, name string, r beacon.Row) bool {
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

// listOptions are the flags of service list.
type listOptions struct {
	Host       string
	Service    string
	Problems   bool
	Undeclared bool
	StaleAfter time.Duration
}

// declares reports whether t declares a service name addresses.
func declares(cat *catalog.Catalog, name string, t *registry.Target) bool {
	for _, s := range t.Services {
		if addresses(cat, name, beacon.Row{Host: t.Name, Service: s.Name, Unit: s.Unit, Product: s.Product}) {
			return true
		}
	}
	return false
}

func newServiceListCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "list",
		Usage: "list declared services joined with the latest host beacons (no SSH)",
		UsageText: "stado service list [--host HOST] [--service NAME] [--problems] [--undeclared] [--stale-after DURATION] [--json]\n\n" +
			"A host whose beacon is older than its staleness bound reads unknown, never active.\n" +
			"The filters are applied before the beacons are read: a host they leave out is not decoded.\n\n" +
			"example:\n   stado service list --host host2 --json\n   stado service list --service brama --problems",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "host", Usage: "only this host"},
			&ucli.StringFlag{Name: "service", Usage: "only this service: its declared name, its unit, or a catalog product's name or unit"},
			&ucli.BoolFlag{Name: "problems", Usage: "only rows that need attention: any state but active (unknown included), an incomplete declaration, an answering question that stood or was answered unsuccessfully"},
			&ucli.BoolFlag{Name: "undeclared", Usage: "list loaded units that no declaration covers"},
			staleFlag(),
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() > 0 {
				return usagef("service list takes no arguments")
			}
			return runServiceList(c.Context, env, listOptions{Host: c.String("host"), Service: c.String("service"), Problems: c.Bool("problems"),
				Undeclared: c.Bool("undeclared"), StaleAfter: c.Duration("stale-after")})
		},
	}, true)
}

// serviceListDoc is the --json form of service list.
type serviceListDoc struct {
	RegistryRevision int64        `json:"registry_revision"`
	At               time.Time    `json:"at"`
	Services         []sourcedRow `json:"services"`
}

// runServiceList lists rows. Its filters choose the beacons to read before
// any is decoded: --host reads that host's beacon alone, and --service
// (without --undeclared) only the beacons of hosts declaring the service.
// --problems needs each row's verdict, so it filters after the join.
func runServiceList(ctx context.Context, env *Env, o listOptions) error {
	selected := false
	var targets func(*catalog.Catalog) func(*registry.Target) bool
	if o.Service != "" && !o.Undeclared {
		targets = func(cat *catalog.Catalog) func(*registry.Target) bool {
			return func(t *registry.Target) bool {
				ok := declares(cat, o.Service, t)
				selected = selected || ok
				return ok
			}
		}
	}
	// a list joins declarations with beacons and reads nothing else of
	// the registry: with the registry's validation cached, only that is
	// decoded
	v, cat, err := loadViewCatalog(ctx, env, beacon.Selection{Host: o.Host, RowsOnly: targets == nil}, o.StaleAfter, targets)
	if err != nil {
		return err
	}
	if o.Host != "" && !v.Declares(o.Host) && v.Beacons[o.Host] == nil {
		return refuse(refusal.NotFound, "no host %q in the registry or the beacons", o.Host)
	}
	if o.Service != "" && !o.Undeclared && !selected {
		return &Refusal{Code: refusal.NotFound, Message: fmt.Sprintf("no declaration of %s on %s", o.Service, cmp.Or(o.Host, "any host")),
			Hint: "stado service list --undeclared shows loaded units no declaration covers"}
	}
	rows, declared, kind := v.Rows(o.Host), true, "stado.service.list"
	if o.Undeclared {
		rows, declared, kind = v.Undeclared(o.Host), false, "stado.service.undeclared"
	}
	if o.Service != "" || o.Problems {
		rows = slices.DeleteFunc(rows, func(r beacon.Row) bool {
			return (o.Service != "" && !addresses(cat, o.Service, r)) || (o.Problems && !r.Problem())
		})
	}
	doc := serviceListDoc{RegistryRevision: v.Meta.Revision, At: v.Now.UTC(), Services: withSources(cat, rows, declared)}
	return emit(env, kind, doc, func(t *text) { t.table(sourcedTable(doc.Services, o.Undeclared)) })
}

// statusOptions are the flags of service status.
type statusOptions struct {
	Name       string
	Host       string
	Lines      int
	StaleAfter time.Duration
	// Logs reads a declaration's last log lines over its host's channel
	// (logsReader); nil when --lines is not given.
	Logs func(ctx context.Context, t registry.Target, s registry.Service, lines int) ([]string, error)
}

func newServiceStatusCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "status",
		Usage: "show one declared service's verdict from the beacons; --lines also reads its log over SSH",
		UsageText: "stado service status NAME [--host HOST] [--lines N] [--json]\n\n" +
			"Without --lines no connection is opened: the verdict, last exit and last stderr line come from the beacon,\n" +
			"and a recovery the host attempted is shown step by step (exit codes, the restart's pid, alerts).\n\n" +
			"example:\n   stado service status brama --host host2 --json",
		Flags: append([]ucli.Flag{
			&ucli.StringFlag{Name: "host", Usage: "the host (default: every host declaring it)"},
			&ucli.IntFlag{Name: "lines", Usage: "also read this many log lines over the host channel"},
			staleFlag(),
		}, sshFlags()...),
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return usagef("service status takes one NAME")
			}
			logs, done := logsReader(c, env)
			defer done()
			return runServiceStatus(c.Context, env, statusOptions{Name: c.Args().First(), Host: c.String("host"), Lines: c.Int("lines"), StaleAfter: c.Duration("stale-after"), Logs: logs})
		},
	}, true)
}

// statusEntry is one host's status of the service.
type statusEntry struct {
	sourcedRow
	Logs     []string `json:"logs,omitempty"`
	LogsRead string   `json:"logs_refusal,omitempty"`
	LogsHint string   `json:"logs_command,omitempty"`
}

// serviceStatusDoc is the --json form of service status.
type serviceStatusDoc struct {
	Service string        `json:"service"`
	Hosts   []statusEntry `json:"hosts"`
}

func runServiceStatus(ctx context.Context, env *Env, o statusOptions) error {
	if o.Lines < 0 || o.Lines > 10000 {
		return usagef("--lines must be between 1 and 10000")
	}
	v, cat, err := loadViewCatalog(ctx, env, beacon.Selection{Host: o.Host}, o.StaleAfter, nil)
	if err != nil {
		return err
	}
	doc := serviceStatusDoc{Service: o.Name}
	for _, r := range withSources(cat, v.Rows(o.Host), true) {
		if !addresses(cat, o.Name, *r.Row) {
			continue
		}
		e := statusEntry{sourcedRow: r, LogsHint: fmt.Sprintf("stado service logs %s --host %s --lines 100", r.Service, r.Host)}
		if o.Lines > 0 { // the row comes from this declaration
			t, _ := v.Document.Target(r.Host)
			s, _ := t.Service(r.Service)
			if e.Logs, err = o.Logs(ctx, *t, *s, o.Lines); err != nil {
				e.LogsRead = err.Error()
			}
		}
		doc.Hosts = append(doc.Hosts, e)
	}
	if len(doc.Hosts) == 0 {
		// no declaration: a catalog entry's unit the beacons see loaded
		// (source product or recovery), addressable without a record
		for _, r := range withSources(cat, v.Undeclared(o.Host), false) {
			if r.Source != "" && addresses(cat, o.Name, *r.Row) {
				if p, ok := cat.Entry(o.Name); ok {
					r.Service = p.Name
				}
				doc.Hosts = append(doc.Hosts, statusEntry{sourcedRow: r, LogsHint: fmt.Sprintf("stado service logs %s --host %s --lines 100", o.Name, r.Host)})
			}
		}
	}
	if len(doc.Hosts) == 0 {
		return &Refusal{Code: refusal.NotFound, Message: fmt.Sprintf("%s is not a registry-managed service on %s", o.Name, cmp.Or(o.Host, "any host")),
			Hint: "stado service list --undeclared shows loaded units no declaration covers"}
	}
	return emit(env, "stado.service.status", doc, func(t *text) {
		for i, e := range doc.Hosts {
			if i > 0 {
				t.f("\n")
			}
			statusText(t, e, o.Lines)
		}
	})
}

// statusText writes one host's status: the row, the recovery its answering
// carries, then its log lines or the command that reads them.
func statusText(t *text, e statusEntry, lines int) {
	rowLines := e.Row.Lines()
	rowLines = slices.Insert(rowLines, 1, "  source: "+cmp.Or(e.Source, "-"))
	t.lines(rowLines)
	if a := e.Answering; a != nil {
		t.indented("    ", register.BeaconLines(a.Recovery))
	}
	switch {
	case lines > 0 && e.LogsRead != "":
		t.f("  logs: could not be read: %s\n", e.LogsRead)
	case lines > 0:
		t.f("  last %d log line(s):\n", len(e.Logs))
		t.indented("    ", e.Logs)
	case e.Failed():
		t.f("  read its log: %s\n", e.LogsHint)
	}
}

type healthOptions struct {
	Host       string
	StaleAfter time.Duration
}

func newHostHealthCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "health",
		Usage: "per host: beacon age, pass, version, counts by verdict and refusals (no SSH)",
		UsageText: "stado host health [--host HOST] [--stale-after DURATION] [--json]\n\n" +
			"Below the table, each recovery a host attempted on another host's service (peer recovery), step by step.\n\n" +
			"example:\n   stado host health --json",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "host", Usage: "only this host"},
			staleFlag(),
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() > 0 {
				return usagef("host health takes no arguments")
			}
			return runHostHealth(c.Context, env, healthOptions{Host: c.String("host"), StaleAfter: c.Duration("stale-after")})
		},
	}, true)
}

// hostHealthDoc is the --json form of host health.
type hostHealthDoc struct {
	At    time.Time           `json:"at"`
	Hosts []beacon.HostHealth `json:"hosts"`
}

func runHostHealth(ctx context.Context, env *Env, o healthOptions) error {
	v, err := loadView(ctx, env, o.StaleAfter, o.Host)
	if err != nil {
		return err
	}
	doc := hostHealthDoc{At: v.Now.UTC(), Hosts: v.Health(o.Host)}
	if o.Host != "" && len(doc.Hosts) == 0 {
		return refuse(refusal.NotFound, "no host %q in the registry or the beacons", o.Host)
	}
	if doc.Hosts == nil {
		doc.Hosts = []beacon.HostHealth{}
	}
	return emit(env, "stado.host.health", doc, func(t *text) {
		t.table(beacon.HealthTable(doc.Hosts))
		for _, h := range doc.Hosts {
			for _, pr := range h.PeerRecoveries {
				t.f("%s saw %s\n", h.Host, pr.Summary())
				t.indented("  ", register.BeaconLines(pr.Recovery))
			}
		}
	})
}

func newRegistryDoctorCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "doctor",
		Usage: "diff every host's declarations against its beacon; exit 3 when anything needs attention (no SSH)",
		UsageText: "stado registry doctor [--stale-after DURATION] [--json]\n\n" +
			"Reports declared-but-missing, failing and failed units, undeclared loaded units, incomplete\n" +
			"declarations, stale or absent beacons, unsuccessful answers and refusals the hosts met.\n\n" +
			"example:\n   stado registry doctor --json",
		Flags: []ucli.Flag{staleFlag()},
		Action: func(c *ucli.Context) error {
			if c.NArg() > 0 {
				return usagef("registry doctor takes no arguments")
			}
			return runRegistryDoctor(c.Context, env, c.Duration("stale-after"))
		},
	}, true)
}

// errNeedsAttention makes doctor exit 3 after printing its findings.
var errNeedsAttention = &Refusal{Code: "needs_attention", Message: "the fleet needs attention"}

// doctorDoc is the --json form of registry doctor.
type doctorDoc struct {
	RegistryRevision int64            `json:"registry_revision"`
	At               time.Time        `json:"at"`
	OK               bool             `json:"ok"`
	Findings         []beacon.Finding `json:"findings"`
}

func runRegistryDoctor(ctx context.Context, env *Env, staleAfter time.Duration) error {
	v, err := loadView(ctx, env, staleAfter, "")
	if err != nil {
		return err
	}
	doc := doctorDoc{RegistryRevision: v.Meta.Revision, At: v.Now.UTC(), Findings: v.Doctor()}
	doc.OK = len(doc.Findings) == 0
	if doc.OK {
		doc.Findings = []beacon.Finding{}
	}
	err = emit(env, "stado.registry.doctor", doc, func(t *text) {
		if doc.OK {
			t.f("ok: every declaration matches its host's fresh beacon\n")
			return
		}
		t.table(beacon.FindingsTable(doc.Findings))
	})
	if err == nil && !doc.OK {
		err = errNeedsAttention
	}
	return err
}
