package desktop

import (
	"cmp"
	"net/url"
	"slices"

	"github.com/wisent/stado/release/rollout"
)

// SummaryLimit bounds the problems and the hosts the summary lists; the
// rest are counted, and reached through the filtered table.
const SummaryLimit = 20

// ProblemRelease is the kind of a problem whose row is healthy but whose
// product's release has not converged (a version differs or none is
// installed).
const ProblemRelease = "release"

// problemOrder ranks problem kinds, worst first.
var problemOrder = map[string]int{MarkFailing: 0, MarkUnknown: 1, MarkAttention: 2, MarkDown: 3, MarkNoVerdict: 4, ProblemRelease: 5}

// unconverged reports whether r's product release has not converged.
func unconverged(r *Row) bool {
	return r.Release != nil && (r.Release.Status == rollout.StatusDiffers || r.Release.Status == rollout.StatusNotInstalled)
}

// problemOf is the kind of problem r is, or "" when it is none.
func problemOf(r *Row) string {
	if r.Mark != MarkHealthy {
		return r.Mark
	}
	if unconverged(r) {
		return ProblemRelease
	}
	return ""
}

// Summary is what the page shows before the table: counts by mark per
// service, the hosts with problems (worst first) and the problems
// themselves (worst first), over the rows the host and service filters
// keep. Lists are bounded by SummaryLimit; the *More fields count the rest.
type Summary struct {
	Rows     int              `json:"rows"`
	Services []ServiceSummary `json:"services"`
	// Hosts lists only hosts with a problem; HostsOK counts the others.
	Hosts     []HostSummary `json:"hosts"`
	HostsMore int           `json:"hosts_more"`
	HostsOK   int           `json:"hosts_ok"`
	Problems  []Problem     `json:"problems"`
	// ProblemsTotal counts every problem; ProblemsMore those not listed.
	ProblemsTotal int `json:"problems_total"`
	ProblemsMore  int `json:"problems_more"`
	// MoreURL is the table filtered to the problems in the same scope.
	MoreURL string `json:"more_url"`
	scope   Filter
}

// ServiceSummary is one service's rows counted by mark.
type ServiceSummary struct {
	Service     string         `json:"service"`
	Rows        int            `json:"rows"`
	Counts      map[string]int `json:"counts"`
	Unconverged int            `json:"release_unconverged"`
	Problems    int            `json:"problems"`
	URL         string         `json:"url"`
}

// HostSummary is one host's problem rows counted by kind.
type HostSummary struct {
	Host     string         `json:"host"`
	Rows     int            `json:"rows"`
	Problems int            `json:"problems"`
	Counts   map[string]int `json:"counts"`
	URL      string         `json:"url"`
	worst    [6]int         // problems per kind, in problemOrder
}

// Problem is one row that needs the operator, in one line.
type Problem struct {
	Kind    string `json:"kind"`
	Host    string `json:"host"`
	Service string `json:"service"`
	Unit    string `json:"unit"`
	State   string `json:"state"`
	Detail  string `json:"detail,omitempty"`
	row     int
}

// filterURL is the page's address with f's filters set.
func filterURL(f Filter) string {
	q := url.Values{}
	for k, v := range map[string]string{"q": f.Query, "mark": f.Mark, "host": f.Host, "service": f.Service} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if len(q) == 0 {
		return "/"
	}
	return "/?" + q.Encode()
}

// summarizer accumulates a Summary over rows in one pass.
type summarizer struct {
	scope    Filter
	services map[string]*ServiceSummary
	hosts    map[string]*HostSummary
	hostRows map[string]int
	problems []Problem
	rows     int
}

func newSummarizer(f Filter) *summarizer {
	return &summarizer{scope: Filter{Host: f.Host, Service: f.Service}, services: map[string]*ServiceSummary{},
		hosts: map[string]*HostSummary{}, hostRows: map[string]int{}}
}

// add counts row i when the scope keeps it.
func (z *summarizer) add(rows []Row, i int) {
	r := &rows[i]
	if !z.scope.Keep(r) {
		return
	}
	z.rows++
	s := z.services[r.Service]
	if s == nil {
		s = &ServiceSummary{Service: r.Service, Counts: map[string]int{}}
		z.services[r.Service] = s
	}
	s.Rows++
	s.Counts[r.Mark]++
	if unconverged(r) {
		s.Unconverged++
	}
	z.hostRows[r.Host]++
	kind := problemOf(r)
	if kind == "" {
		return
	}
	s.Problems++
	h := z.hosts[r.Host]
	if h == nil {
		h = &HostSummary{Host: r.Host, Counts: map[string]int{}}
		z.hosts[r.Host] = h
	}
	h.Problems++
	h.Counts[kind]++
	h.worst[problemOrder[kind]]++
	detail := r.Detail()
	if kind == ProblemRelease {
		detail = "release " + r.Release.Version
	}
	z.problems = append(z.problems, Problem{Kind: kind, Host: r.Host, Service: r.Service, Unit: r.Unit, State: r.State, Detail: detail, row: i})
}

// summary is the accumulated Summary, its lists sorted and bounded.
func (z *summarizer) summary() Summary {
	sm := Summary{Rows: z.rows, Services: []ServiceSummary{}, Hosts: []HostSummary{}, Problems: []Problem{}, scope: z.scope,
		ProblemsTotal: len(z.problems)}
	for _, s := range z.services {
		s.URL = filterURL(Filter{Host: z.scope.Host, Service: s.Service})
		sm.Services = append(sm.Services, *s)
	}
	slices.SortFunc(sm.Services, func(a, b ServiceSummary) int { return cmp.Compare(a.Service, b.Service) })
	hosts := make([]*HostSummary, 0, len(z.hosts))
	for _, h := range z.hosts {
		h.Rows = z.hostRows[h.Host]
		hosts = append(hosts, h)
	}
	// worst first: more rows of a worse kind, then more problems, then name
	slices.SortFunc(hosts, func(a, b *HostSummary) int {
		for k := range a.worst {
			if c := cmp.Compare(b.worst[k], a.worst[k]); c != 0 {
				return c
			}
		}
		return cmp.Compare(a.Host, b.Host)
	})
	sm.HostsOK = len(z.hostRows) - len(hosts)
	for _, h := range hosts[:min(len(hosts), SummaryLimit)] {
		h.URL = filterURL(Filter{Host: h.Host, Service: z.scope.Service, Mark: "problems"})
		sm.Hosts = append(sm.Hosts, *h)
	}
	sm.HostsMore = len(hosts) - len(sm.Hosts)
	// the problems: worst kind first, then the table's order (host, then
	// declaration)
	slices.SortStableFunc(z.problems, func(a, b Problem) int { return cmp.Compare(problemOrder[a.Kind], problemOrder[b.Kind]) })
	sm.Problems = append(sm.Problems, z.problems[:min(len(z.problems), SummaryLimit)]...)
	sm.ProblemsMore = len(z.problems) - len(sm.Problems)
	sm.MoreURL = filterURL(Filter{Host: z.scope.Host, Service: z.scope.Service, Mark: "problems"})
	return sm
}
