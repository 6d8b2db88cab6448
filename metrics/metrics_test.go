package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/register"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/release"
	"github.com/wisent/stado/store"
)

var t0 = time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)

func fleet() *registry.Document {
	return &registry.Document{
		Version:         1,
		ServiceResolver: registry.ServiceResolver{RefreshSeconds: 5},
		Targets: []registry.Target{
			{Name: "host1", SSH: registry.SSH{Address: "127.0.1.1"}, OS: "linux", Services: []registry.Service{
				{Name: "web", Unit: "web.service", Program: "/usr/local/bin/web"},
				{Name: "desk", Unit: "desk.service", Program: "/usr/local/bin/desk", Scope: "user"},
			}},
			{Name: "host2", SSH: registry.SSH{Address: "127.0.1.2"}, OS: "linux", Services: []registry.Service{
				{Name: "api", Unit: "api.service", Program: "/usr/local/bin/api"},
			}},
		},
	}
}

// units stands for the init system: web runs, desk has failed, one
// undeclared unit is loaded.
type units struct{}

func (units) Observe(_ context.Context, names []string) ([]beacon.UnitReport, error) {
	out := make([]beacon.UnitReport, len(names))
	for i, n := range names {
		out[i] = beacon.UnitReport{Unit: n, State: map[string]string{"web.service": beacon.StateActive, "desk.service": beacon.StateFailed}[n]}
		if out[i].State == "" {
			out[i].State = beacon.StateInactive
		}
	}
	return out, nil
}
func (units) Loaded(context.Context, map[string]bool) ([]string, error) {
	return []string{"web.service", "stray.service"}, nil
}
func (units) LastLine(context.Context, string) (string, error) { return "", nil }

// repairs stands for the repair contributors: web's question stood and its
// recovery ended with a failed restart; a peer recovery of api on host2
// ended complete; the site catalog could not be read.
type repairs struct{}

func (repairs) Contribute(_ context.Context, p *beacon.Pass) {
	p.Refuse("catalog_unreadable", store.CatalogKey, "read the site catalog: disk gone")
	since := t0.Add(-time.Minute)
	if u := p.Unit("web"); u != nil {
		u.Answering = &beacon.Answering{State: beacon.AnswerStood, Since: &since,
			Recovery: attempt("web", "host1", t0.Add(time.Second), false, false)}
	}
	if u := p.Unit("desk"); u != nil {
		u.Answering = &beacon.Answering{State: beacon.AnswerFinished,
			Finished: &beacon.Finished{Refused: &beacon.Refused{Cause: "connection refused", At: t0}}}
	}
	p.Beacon.PeerRecoveries = append(p.Beacon.PeerRecoveries, beacon.PeerRecovery{Service: "api", Host: "host2", Since: &since,
		Recovery: attempt("api", "host2", t0.Add(2*time.Second), true, true)})
}

func attempt(service, host string, when time.Time, restarted, complete bool) json.RawMessage {
	b, err := json.Marshal(register.Recovery{Kind: register.Kind, State: register.Attempted, When: when, Service: service, Host: host,
		Restart: &register.Restart{OK: restarted}, Complete: complete})
	if err != nil {
		panic(err)
	}
	return b
}

// hostProcess is a host process as cli builds it: the store wrapped by m,
// the runner telling m of every pass and serving its handler.
func hostProcess(t *testing.T, m *Host) *beacon.Runner {
	t.Helper()
	fs, err := store.OpenFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	st := m.Instrument(fs)
	t.Cleanup(func() { st.Close() })
	if _, err := registry.Push(context.Background(), st, fleet(), 0, "test"); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := release.WriteHostState(root, release.HostState{Products: map[string]release.ProductState{
		"web": {Active: &release.Image{Product: "web", Version: "1.2.0", SHA256: "ab"},
			Last: &release.Activation{Product: "web", Version: "1.2.0", SHA256: "ab", At: t0.Add(time.Second), Outcome: release.OutcomeActivated}},
	}}); err != nil {
		t.Fatal(err)
	}
	return &beacon.Runner{Host: "host1", Store: st, Observer: units{}, Contributors: []beacon.Contributor{repairs{}},
		Config: beacon.Config{Interval: time.Second}, Now: func() time.Time { return t0 }, ReleaseRoot: root,
		PassObserver: m, MetricsHandler: m.Handler()}
}

// documented reads the family names docs/metrics.md lists in its table.
func documented(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range regexp.MustCompile("(?m)^\\| `(stado_[a-z_]+)` \\|").FindAllStringSubmatch(string(doc), -1) {
		names = append(names, m[1])
	}
	if len(names) == 0 {
		t.Fatal("docs/metrics.md lists no family")
	}
	return names
}

func TestMetricsServesEveryDocumentedFamilyAfterOnePass(t *testing.T) {
	r := hostProcess(t, New(t0))
	if _, err := r.RunPass(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(r.APIHandler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	text := string(body)
	for _, name := range documented(t) {
		if !strings.Contains(text, "# HELP "+name+" ") || !strings.Contains(text, "# TYPE "+name+" ") {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	// the Go runtime and process collectors ride along
	if !strings.Contains(text, "go_goroutines ") {
		t.Error("/metrics lacks the Go collector")
	}
	// and the pass is read into them
	for _, want := range []string{
		`stado_passes_total{outcome="published"} 1`,
		`stado_units{scope="system",state="active"} 1`,
		`stado_units{scope="user",state="failed"} 1`,
		`stado_undeclared_units{state="inactive"} 1`,
		`stado_answering_verdicts_total{verdict="stood"} 1`,
		`stado_answering_verdicts_total{verdict="refused"} 1`,
		`stado_recoveries_total{outcome="restart_failed"} 1`,
		`stado_peer_recoveries_total{outcome="complete"} 1`,
		`stado_release_activations_total{outcome="activated"} 1`,
		`stado_release_active_info{product="web",version="1.2.0"} 1`,
		`stado_store_operation_duration_seconds_count{operation="put"} 2`, // the registry push and the beacon
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func TestEveryRegisteredFamilyIsDocumentedAndEveryDocumentedOneRegistered(t *testing.T) {
	m := New(t0)
	r := hostProcess(t, m)
	if _, err := r.RunPass(context.Background()); err != nil {
		t.Fatal(err)
	}
	text := scrape(t, m.Handler())
	registered := map[string]bool{}
	for _, name := range typed(text) {
		if strings.HasPrefix(name, "stado_") {
			registered[name] = true
		} else if !strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, "process_") {
			t.Errorf("%s is neither stado's nor the Go runtime's or the process's", name)
		}
	}
	docs := map[string]bool{}
	for _, name := range documented(t) {
		docs[name] = true
		if !registered[name] {
			t.Errorf("docs/metrics.md lists %s, which is not registered", name)
		}
	}
	var undocumented []string
	for name := range registered {
		if !docs[name] {
			undocumented = append(undocumented, name)
		}
	}
	sort.Strings(undocumented)
	if len(undocumented) > 0 {
		t.Errorf("registered but not in docs/metrics.md: %v", undocumented)
	}
	// names by Prometheus's conventions: counters end _total, nothing else
	// does, a histogram is in a base unit, every family says what it is
	for name, f := range parse(t, text) {
		if !strings.HasPrefix(name, "stado_") {
			continue
		}
		if isCounter := f.GetType() == dto.MetricType_COUNTER; isCounter != strings.HasSuffix(name, "_total") {
			t.Errorf("lint %s: a %s; counters, and only counters, end _total", name, f.GetType())
		}
		if f.GetType() == dto.MetricType_HISTOGRAM && !strings.HasSuffix(name, "_seconds") {
			t.Errorf("lint %s: a histogram not in seconds", name)
		}
		if strings.TrimSpace(f.GetHelp()) == "" {
			t.Errorf("lint %s: no HELP", name)
		}
		for _, bad := range []string{"_milliseconds", "_microseconds", "_nanoseconds", "_minutes", "_hours", "_kilobytes", "_megabytes", "_count", "_sum", "_bucket"} {
			if strings.Contains(name, bad) {
				t.Errorf("lint %s: %s is not a base unit or is a reserved suffix", name, bad)
			}
		}
	}
}

func TestEventsABeaconCarriesPassAfterPassCountOnce(t *testing.T) {
	m := New(t0)
	r := hostProcess(t, m)
	for range 3 {
		if _, err := r.RunPass(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		got  float64
	}{
		// the same stood question (by the time it was sent), three passes
		{"stood", m.verdicts.value("stood")},
		// the same attempt (by the time it began), three passes
		{"recovery", m.recoveries.value("restart_failed")},
		{"peer recovery", m.peerRecoveries.value("complete")},
		// the same activation in the state file, three passes
		{"activation", m.activations.value("activated")},
	} {
		if c.got != 1 {
			t.Errorf("%s counted %v times, want once", c.name, c.got)
		}
	}
	// a finished question is finished in one pass only, so each counts
	if got := m.verdicts.value("refused"); got != 3 {
		t.Errorf("refused verdicts %v, want 3", got)
	}
	if got := m.passes.value("published"); got != 3 {
		t.Errorf("published passes %v, want 3", got)
	}
	// gauges say the last pass, not the sum of passes
	if got := m.units.value("system", beacon.StateActive); got != 1 {
		t.Errorf("active system units %v, want 1", got)
	}
}

func TestRecordsOlderThanTheProcessAreNotCounted(t *testing.T) {
	// the process started after the attempts and the activation
	m := New(t0.Add(time.Hour))
	r := hostProcess(t, m)
	if _, err := r.RunPass(context.Background()); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]float64{
		"recovery":      m.recoveries.value("restart_failed"),
		"peer recovery": m.peerRecoveries.value("complete"),
		"activation":    m.activations.value("activated"),
	} {
		if c != 0 {
			t.Errorf("%s counted %v, want 0: an earlier process saw it", name, c)
		}
	}
	// what is true now is still said
	if got := m.activeRelease.value("web", "1.2.0"); got != 1 {
		t.Errorf("active release info %v, want 1", got)
	}
}

func TestAttemptOutcomesAreNamedFromTheRecord(t *testing.T) {
	for _, c := range []struct {
		name string
		rec  register.Recovery
		want string
	}{
		// every step and the restart ended well
		{"complete", register.Recovery{Restart: &register.Restart{OK: true}, Complete: true}, "complete"},
		// the restart did, a step did not
		{"step", register.Recovery{Restart: &register.Restart{OK: true}, Steps: []register.StepResult{{OK: false}}}, "step_failed"},
		// the restart did not, whatever the steps did
		{"restart", register.Recovery{Restart: &register.Restart{OK: false}}, "restart_failed"},
		// no restart recorded at all
		{"none", register.Recovery{}, "restart_failed"},
	} {
		if got := outcome(c.rec); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

func TestPublishFailuresAreCountedByCause(t *testing.T) {
	m := New(t0)
	p := &beacon.Pass{Beacon: &beacon.Beacon{At: t0}}
	m.PassEnded(beacon.PassReport{Pass: p, Took: time.Second, PublishErr: errors.New("disk full")})
	m.PassEnded(beacon.PassReport{Pass: p, Took: time.Second, Slimmed: true})
	if got := m.publishFailures.value("store_unwritable"); got != 1 {
		t.Errorf("store_unwritable %v, want 1", got)
	}
	// a slimmed beacon was published, without its reports
	if got := m.publishFailures.value(beacon.CodeBeaconTooLarge); got != 1 {
		t.Errorf("beacon_too_large %v, want 1", got)
	}
	if got := m.passes.value("published"); got != 1 {
		t.Errorf("published %v, want 1", got)
	}
	if got := m.lastPublished.value(); got != float64(t0.Unix()) {
		t.Errorf("last published %v, want %d", got, t0.Unix())
	}
}

func TestLabelValuesOutsideTheirSetAreCountedAsOther(t *testing.T) {
	m := New(t0)
	p := &beacon.Pass{Beacon: &beacon.Beacon{At: t0,
		Units:    []beacon.UnitReport{{Service: "x", Unit: "x.service", State: "reloading-in-2031"}},
		Releases: &beacon.Releases{State: beacon.ReleasesRead, Products: []beacon.ProductRelease{{Product: "web", Last: &beacon.ReleaseActivation{Outcome: "teleported", At: t0}}}},
	}}
	m.PassEnded(beacon.PassReport{Pass: p})
	if got := m.units.value("system", "other"); got != 1 {
		t.Errorf("other units %v, want 1", got)
	}
	if got := m.activations.value("other"); got != 1 {
		t.Errorf("other activations %v, want 1", got)
	}
}

func TestManyDeclaredServicesAddNoSeries(t *testing.T) {
	count := func(units int) int {
		m := New(t0)
		b := &beacon.Beacon{At: t0}
		for i := range units {
			b.Units = append(b.Units, beacon.UnitReport{Service: fmt.Sprintf("svc%d", i), Unit: fmt.Sprintf("svc%d.service", i),
				State: []string{beacon.StateActive, beacon.StateFailed, "novel"}[i%3], Answering: &beacon.Answering{State: beacon.AnswerWaiting}})
			b.Undeclared = append(b.Undeclared, beacon.UnitReport{Unit: fmt.Sprintf("stray%d.service", i), State: beacon.StateActive})
		}
		m.PassEnded(beacon.PassReport{Pass: &beacon.Pass{Beacon: b}})
		n := 0
		for _, f := range parse(t, scrape(t, m.Handler())) {
			n += len(f.GetMetric())
		}
		return n
	}
	// no family is labelled by a service, unit or host name
	if one, many := count(1), count(3000); one != many {
		t.Fatalf("1 service: %d series, 3000 services: %d", one, many)
	}
}

// scrape is one GET /metrics of h; it fails the test on any status but 200.
func scrape(t *testing.T, h http.Handler) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: %d", rec.Code)
	}
	return rec.Body.String()
}

// parse reads a scrape with Prometheus's own text parser, which refuses
// what the format does not allow.
func parse(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	families, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("the scrape does not parse: %v\n%s", err, text)
	}
	return families
}

// typed returns the families a scrape declares with a TYPE line, in order
// (a family with no series yet has its HELP and TYPE lines alone).
func typed(text string) []string {
	var names []string
	for _, line := range strings.Split(text, "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			names = append(names, f[2])
		}
	}
	return names
}
