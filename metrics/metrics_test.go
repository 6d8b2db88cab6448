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

	"github.com/prometheus/client_golang/prometheus/testutil"

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
func (units) Loaded(context.Context) ([]string, error) {
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
	families, err := m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	registered := map[string]bool{}
	for _, f := range families {
		if name := f.GetName(); strings.HasPrefix(name, "stado_") {
			registered[name] = true
		} else if !strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, "process_") && !strings.HasPrefix(name, "promhttp_") {
			t.Errorf("%s is neither stado's nor the Go or process collectors'", name)
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
	// names by Prometheus's conventions: counters end _total, no family
	// breaks the linter's rules
	problems, err := testutil.GatherAndLint(m.Gatherer())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "stado_") {
			t.Errorf("lint %s: %s", p.Metric, p.Text)
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
		{"stood", testutil.ToFloat64(m.verdicts.WithLabelValues("stood"))},
		// the same attempt (by the time it began), three passes
		{"recovery", testutil.ToFloat64(m.recoveries.WithLabelValues("restart_failed"))},
		{"peer recovery", testutil.ToFloat64(m.peerRecoveries.WithLabelValues("complete"))},
		// the same activation in the state file, three passes
		{"activation", testutil.ToFloat64(m.activations.WithLabelValues("activated"))},
	} {
		if c.got != 1 {
			t.Errorf("%s counted %v times, want once", c.name, c.got)
		}
	}
	// a finished question is finished in one pass only, so each counts
	if got := testutil.ToFloat64(m.verdicts.WithLabelValues("refused")); got != 3 {
		t.Errorf("refused verdicts %v, want 3", got)
	}
	if got := testutil.ToFloat64(m.passes.WithLabelValues("published")); got != 3 {
		t.Errorf("published passes %v, want 3", got)
	}
	// gauges say the last pass, not the sum of passes
	if got := testutil.ToFloat64(m.units.WithLabelValues("system", beacon.StateActive)); got != 1 {
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
		"recovery":      testutil.ToFloat64(m.recoveries.WithLabelValues("restart_failed")),
		"peer recovery": testutil.ToFloat64(m.peerRecoveries.WithLabelValues("complete")),
		"activation":    testutil.ToFloat64(m.activations.WithLabelValues("activated")),
	} {
		if c != 0 {
			t.Errorf("%s counted %v, want 0: an earlier process saw it", name, c)
		}
	}
	// what is true now is still said
	if got := testutil.ToFloat64(m.activeRelease.WithLabelValues("web", "1.2.0")); got != 1 {
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
	if got := testutil.ToFloat64(m.publishFailures.WithLabelValues("store_unwritable")); got != 1 {
		t.Errorf("store_unwritable %v, want 1", got)
	}
	// a slimmed beacon was published, without its reports
	if got := testutil.ToFloat64(m.publishFailures.WithLabelValues(beacon.CodeBeaconTooLarge)); got != 1 {
		t.Errorf("beacon_too_large %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.passes.WithLabelValues("published")); got != 1 {
		t.Errorf("published %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.lastPublished); got != float64(t0.Unix()) {
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
	if got := testutil.ToFloat64(m.units.WithLabelValues("system", "other")); got != 1 {
		t.Errorf("other units %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.activations.WithLabelValues("other")); got != 1 {
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
		n, err := testutil.GatherAndCount(m.Gatherer())
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// no family is labelled by a service, unit or host name
	if one, many := count(1), count(3000); one != many {
		t.Fatalf("1 service: %d series, 3000 services: %d", one, many)
	}
}
