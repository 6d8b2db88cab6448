package desktop

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/release/rollout"
	"github.com/wisent/stado/store"
)

// snapshot is the store as last read: the registry joined with its
// beacons, and the catalog. Rows are judged afresh at every request, so a
// beacon that stops being replaced turns its rows unknown as time passes.
type snapshot struct {
	view   *beacon.View
	cat    *catalog.Catalog
	gen    uint64
	loaded time.Time

	mu     sync.Mutex
	rowsAt time.Time // the second rows were judged at
	rows   []Row
	asks   map[string]bool   // catalog name or unit -> its product asks a question
	source map[string]string // unit -> its source
}

// minReload bounds how often a changing store is read again.
const minReload = 2 * time.Second

// judgedFor is how long judged rows are reused: a row's freshness is at
// most this late (Serve re-judges every second in the background, so a
// request seldom pays for it).
const judgedFor = 2 * time.Second

// load returns the store's snapshot, read again when the store changed
// (at most every minReload) or after the refresh interval.
func (s *Server) load(ctx context.Context) (*snapshot, error) {
	gen, _ := s.feed.current()
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if sn := s.snap; sn != nil {
		age := now.Sub(sn.loaded)
		if (sn.gen == gen && age < s.cfg.Refresh) || age < minReload {
			return sn, nil
		}
	}
	v, err := beacon.LoadView(ctx, s.cfg.Store, s.cfg.Now(), s.cfg.StaleAfter)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, &refusal.Error{Code: refusal.NotFound, Message: "the store holds no registry", Hint: "stado registry push FILE", Err: err}
		}
		var ve *registry.ValidationError
		if errors.As(err, &ve) {
			return nil, &refusal.Error{Code: refusal.Validation, Message: err.Error(), Err: err}
		}
		return nil, err
	}
	cat, err := catalog.LoadOrShipped(ctx, s.cfg.Store)
	if err != nil {
		return nil, err
	}
	s.snap = &snapshot{view: v, cat: cat, gen: gen, loaded: now}
	return s.snap, nil
}

// Warm reads the store and judges its rows, so that the first request
// does not wait for it. The error is the store's (a refusal when it holds
// no registry).
func (s *Server) Warm(ctx context.Context) error {
	sn, err := s.load(ctx)
	if err != nil {
		return err
	}
	sn.mu.Lock()
	sn.judge(s.cfg.Now())
	sn.mu.Unlock()
	return nil
}

// keepWarm re-reads and re-judges every second until ctx ends.
func (s *Server) keepWarm(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			s.Warm(ctx)
		}
	}
}

// Marks of a row, one per row: what the operator should read first.
const (
	MarkFailing   = "failing"    // the unit failed or crash-loops
	MarkUnknown   = "unknown"    // no trusted beacon: stale, absent or unreadable
	MarkAttention = "attention"  // the unit runs but its answer is not a success (503, stood, refused), or its file drifted
	MarkNoVerdict = "no-verdict" // the product asks a question and no successful answer is known
	MarkDown      = "down"       // missing or inactive
	MarkHealthy   = "healthy"    // active, and answered successfully when its product asks
)

// Row is one line of the services table: the join's row, its source, its
// mark and the words the table shows.
type Row struct {
	beacon.Row
	Source string `json:"source,omitempty"`
	Mark   string `json:"mark"`
	// Verdict is the answering verdict in one line; VerdictDetail the body
	// of an unsuccessful answer, or what stood.
	Verdict       string `json:"verdict,omitempty"`
	VerdictDetail string `json:"verdict_detail,omitempty"`
	// Age is how old the beacon is ("12s"), or why there is none.
	Age string `json:"age"`
	// Release is where the row's product stands on its host, for a
	// declaration that names a product; nil otherwise.
	Release *Release `json:"release,omitempty"`
	// search is the lowercased text a search matches.
	search string
}

// Release is a row's product on its host as the host's beacon carries it
// (rollout.ShowFleet's row, the same `stado release version show` prints):
// the declared version, the active and backup images and the last
// activation with its evidence.
type Release struct {
	Product  string `json:"product"`
	Declared string `json:"declared,omitempty"`
	Pinned   bool   `json:"pinned,omitempty"`
	// Status is rollout's: converged, differs, not_installed, undeclared
	// or unknown (Unknown says why).
	Status  string                    `json:"status"`
	Unknown string                    `json:"unknown,omitempty"`
	Active  *beacon.ReleaseImage      `json:"active,omitempty"`
	Backup  *beacon.ReleaseImage      `json:"backup,omitempty"`
	Last    *beacon.ReleaseActivation `json:"last,omitempty"`
	// Version is the version column: the active version ("none" when no
	// image is active), then " → " and the declared one when they differ;
	// "unknown" when the host's images are not known.
	Version string `json:"version"`
}

// releaseOf is the Release of a show row.
func releaseOf(r *rollout.Row) *Release {
	rel := &Release{Product: r.Product, Declared: r.Declared, Pinned: r.Pinned, Status: r.Status, Unknown: r.Unknown,
		Active: r.Active, Backup: r.Backup, Last: r.Last}
	active := "none"
	if r.Active != nil {
		active = r.Active.Version
	}
	switch {
	case r.Status == rollout.StatusUnknown:
		rel.Version = "unknown"
		if r.Declared != "" {
			rel.Version += " → " + r.Declared
		}
	case r.Declared != "" && r.Declared != active:
		rel.Version = active + " → " + r.Declared
	default:
		rel.Version = active
	}
	return rel
}

// Rows joins the snapshot's registry with its beacons at now, in host
// then declaration order: the rows `service list` prints, with their
// source and mark.
// Rows judged less than judgedFor before now are returned again (they are
// read-only).
func (sn *snapshot) Rows(now time.Time) []Row {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	if age := now.Sub(sn.rowsAt); sn.rows != nil && age >= 0 && age < judgedFor {
		return sn.rows
	}
	return sn.judge(now)
}

// judge judges every row at now; sn.mu is held.
func (sn *snapshot) judge(now time.Time) []Row {
	if sn.asks == nil {
		sn.asks, sn.source = map[string]bool{}, map[string]string{}
	}
	v := *sn.view
	v.Now = now
	in := v.Rows("")
	// Where each host's products stand, judged from the same beacons at
	// the same instant; only products a declaration names are looked up.
	releases := map[string]*rollout.Row{}
	for _, rr := range rollout.ShowFleet(&v, rollout.DeclarationsOf(v.Document), "") {
		releases[rr.Host+"\x00"+rr.Product] = &rr
	}
	out := make([]Row, 0, len(in))
	for _, r := range in {
		var rel *Release
		if r.Product != "" {
			if rr := releases[r.Host+"\x00"+r.Product]; rr != nil {
				rel = releaseOf(rr)
			}
		}
		out = append(out, sn.newRow(r, rel))
	}
	sn.rows, sn.rowsAt = out, now
	return out
}

// asksQuestion reports whether the catalog entry name selects declares an
// answering question (memoized: a catalog lookup is not cheap).
func (sn *snapshot) asksQuestion(name string) bool {
	if name == "" {
		return false
	}
	a, ok := sn.asks[name]
	if !ok {
		p, found := sn.cat.Entry(name)
		a = found && p.Answering != nil
		sn.asks[name] = a
	}
	return a
}

func (sn *snapshot) newRow(r beacon.Row, rel *Release) Row {
	src, ok := sn.source[r.Unit]
	if !ok {
		src = sn.cat.SourceOf(r.Unit, true)
		sn.source[r.Unit] = src
	}
	row := Row{Row: r, Source: src, Release: rel}
	switch r.Beacon.Kind {
	case beacon.FreshnessMissing:
		row.Age = "no beacon"
	case beacon.FreshnessUnreadable:
		row.Age = "unreadable"
	default:
		row.Age = (time.Duration(r.Beacon.AgeSeconds) * time.Second).String()
	}
	asks := sn.asksQuestion(cmp.Or(r.Product, r.Service)) || sn.asksQuestion(r.Unit)
	successful := false
	if a := r.Answering; a != nil {
		row.Verdict = a.Summary()
		if f := a.Finished; a.State == beacon.AnswerFinished && f != nil {
			if f.Answered != nil {
				successful = f.Answered.Successful
				if !successful {
					row.VerdictDetail = f.Answered.Detail
				}
			} else if f.Refused != nil {
				row.VerdictDetail = f.Refused.Cause
			}
		}
	}
	switch {
	case r.State == beacon.StateUnknown:
		row.Mark = MarkUnknown
	case r.Failed():
		row.Mark = MarkFailing
	case r.State == beacon.StateMissing || r.State == beacon.StateInactive:
		row.Mark = MarkDown
	case r.Answering != nil && !successful && r.Answering.State != beacon.AnswerAsked && r.Answering.State != beacon.AnswerWaiting:
		row.Mark = MarkAttention
	case (asks || r.Answering != nil) && !successful:
		// a question is declared and no success is known (asked, waiting,
		// or a beacon that carries no answering block): never healthy
		row.Mark = MarkNoVerdict
	case r.Drifted():
		// it runs, but not the bytes its declaration renders (the host says)
		row.Mark = MarkAttention
	case r.State == beacon.StateActive:
		row.Mark = MarkHealthy
	default:
		row.Mark = MarkAttention
	}
	if row.Verdict == "" && asks {
		row.Verdict = "no answering verdict in this beacon"
	}
	version := ""
	if rel != nil {
		version = rel.Version
	}
	row.search = strings.ToLower(strings.Join([]string{r.Host, r.Service, r.Unit, row.Source, r.State, row.Mark, r.Detail(), version}, "\x00"))
	return row
}

// Filter selects rows: Query is searched (case-insensitive) in host,
// service, unit, source, state, mark and detail; Mark keeps one mark
// ("problems" keeps every row that is not healthy, and every row whose
// product's release has not converged); Host keeps one host and Service
// one service.
type Filter struct {
	Query   string
	Mark    string
	Host    string
	Service string
}

// Keep reports whether r passes f.
func (f Filter) Keep(r *Row) bool {
	if f.Host != "" && r.Host != f.Host {
		return false
	}
	if f.Service != "" && r.Service != f.Service {
		return false
	}
	switch f.Mark {
	case "", "all":
	case "problems":
		if problemOf(r) == "" {
			return false
		}
	default:
		if r.Mark != f.Mark {
			return false
		}
	}
	if q := strings.TrimSpace(f.Query); q != "" {
		for _, w := range strings.Fields(strings.ToLower(q)) {
			if !strings.Contains(r.search, w) {
				return false
			}
		}
	}
	return true
}

// Page is one page of the filtered table.
type Page struct {
	Rows     []Row
	Total    int // rows in the fleet
	Matched  int // rows the filter kept
	Page     int // 1-based
	Pages    int
	Counts   map[string]int // rows per mark, over the whole fleet
	Filter   Filter
	Revision int64
	At       time.Time
	Hosts    []string
	Services []string
	// Summary is counted over the rows the host and service filters keep.
	Summary Summary
	Error   *refusalView
}

// Select filters rows, cuts page (1-based) of size and summarizes the
// rows in the filter's host and service, in one pass over rows.
func Select(rows []Row, f Filter, page, size int) Page {
	p := Page{Total: len(rows), Filter: f, Counts: map[string]int{}}
	kept := make([]int32, 0, len(rows))
	z := newSummarizer(f)
	for i := range rows {
		p.Counts[rows[i].Mark]++
		z.add(rows, i)
		if f.Keep(&rows[i]) {
			kept = append(kept, int32(i))
		}
	}
	p.Matched = len(kept)
	p.Pages = max(1, (len(kept)+size-1)/size)
	p.Page = min(max(page, 1), p.Pages)
	lo := (p.Page - 1) * size
	for _, i := range kept[lo:min(lo+size, len(kept))] {
		p.Rows = append(p.Rows, rows[i])
	}
	p.Summary = z.summary()
	return p
}

// pageOf reads the request's filter and page and selects from the store's
// rows now.
func (s *Server) pageOf(r *http.Request) Page {
	q := r.URL.Query()
	f := Filter{Query: q.Get("q"), Mark: q.Get("mark"), Host: q.Get("host"), Service: q.Get("service")}
	n, _ := strconv.Atoi(q.Get("page"))
	sn, err := s.load(r.Context())
	if err != nil {
		return Page{Filter: f, Page: 1, Pages: 1, Counts: map[string]int{}, Summary: newSummarizer(f).summary(), Error: viewOfError(err)}
	}
	now := s.cfg.Now()
	p := Select(sn.Rows(now), f, n, s.cfg.PageSize)
	p.Revision, p.At = sn.view.Meta.Revision, now.UTC()
	seen := map[string]bool{}
	for _, t := range sn.view.Document.Targets {
		p.Hosts = append(p.Hosts, t.Name)
		for _, sv := range t.Services {
			if !seen[sv.Name] {
				seen[sv.Name] = true
				p.Services = append(p.Services, sv.Name)
			}
		}
	}
	slices.Sort(p.Hosts)
	slices.Sort(p.Services)
	return p
}

// pageView is what the page template reads.
type pageView struct {
	Page
	CSRF      string
	RefreshMS int64
	Gen       uint64
	Marks     []string
}

func (s *Server) handlePage(w http.ResponseWriter, r *http.Request) {
	gen, _ := s.feed.current()
	s.render(w, "page", pageView{Page: s.pageOf(r), CSRF: s.csrf, RefreshMS: s.cfg.Refresh.Milliseconds(), Gen: gen,
		Marks: []string{MarkFailing, MarkUnknown, MarkAttention, MarkNoVerdict, MarkDown, MarkHealthy}})
}

func (s *Server) handleRows(w http.ResponseWriter, r *http.Request) {
	p := s.pageOf(r)
	if r.URL.Query().Get("format") == "json" {
		s.renderJSON(w, rowsDocOf(p))
		return
	}
	s.render(w, "rows", p)
}

// SummaryKind marks the JSON document of GET /summary?format=json.
const SummaryKind = "stado.desktop.summary"

// handleSummary answers the summary alone: as JSON with format=json, else
// the HTML fragment the page shows above the table.
func (s *Server) handleSummary(w http.ResponseWriter, r *http.Request) {
	p := s.pageOf(r)
	if r.URL.Query().Get("format") == "json" {
		s.renderJSON(w, summaryDoc{Kind: SummaryKind, Revision: p.Revision, At: p.At, Summary: p.Summary, Error: p.Error})
		return
	}
	s.render(w, "fleetsummary", p.Summary)
}

// summaryDoc is the summary as JSON.
type summaryDoc struct {
	Kind     string       `json:"kind"`
	Revision int64        `json:"revision"`
	At       time.Time    `json:"at"`
	Summary  Summary      `json:"summary"`
	Error    *refusalView `json:"error,omitempty"`
}

// RowsKind marks the JSON document of GET /rows?format=json.
const RowsKind = "stado.desktop.rows"

// rowsDoc is one page of the table as JSON: the rows the page shows, with
// the same filter and paging.
type rowsDoc struct {
	Kind     string         `json:"kind"`
	Revision int64          `json:"revision"`
	At       time.Time      `json:"at"`
	Total    int            `json:"total"`
	Matched  int            `json:"matched"`
	Page     int            `json:"page"`
	Pages    int            `json:"pages"`
	Counts   map[string]int `json:"counts"`
	Rows     []Row          `json:"rows"`
	Summary  Summary        `json:"summary"`
	Error    *refusalView   `json:"error,omitempty"`
}

func rowsDocOf(p Page) rowsDoc {
	rows := p.Rows
	if rows == nil {
		rows = []Row{}
	}
	return rowsDoc{Kind: RowsKind, Revision: p.Revision, At: p.At, Total: p.Total, Matched: p.Matched, Page: p.Page, Pages: p.Pages,
		Counts: p.Counts, Rows: rows, Summary: p.Summary, Error: p.Error}
}

// refusalView is a refusal as the page shows it.
type refusalView struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
}

func viewOfError(err error) *refusalView {
	var re *refusal.Error
	if errors.As(err, &re) {
		return &refusalView{Code: string(re.Code), Message: re.Message, Hint: re.Hint}
	}
	if c, ok := refusal.CodeOf(err); ok {
		return &refusalView{Code: string(c), Message: err.Error()}
	}
	return &refusalView{Code: "failure", Message: err.Error()}
}
