package beacon

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/registry"
)

// heardPasses records what a PassObserver is told.
type heardPasses struct{ reports []PassReport }

func (h *heardPasses) PassEnded(r PassReport) { h.reports = append(h.reports, r) }

func TestEveryPassIsToldToThePassObserverWithItsDurationAndPublication(t *testing.T) {
	st := &failingPuts{Store: newStore(t)}
	if _, err := registry.Push(context.Background(), st, fleet(), 0, "test"); err != nil {
		t.Fatal(err)
	}
	clock := t0
	now := func() time.Time { t := clock; clock = clock.Add(250 * time.Millisecond); return t }
	heard := &heardPasses{}
	r := &Runner{Host: "host1", Store: st, Observer: staticObserver{}, Config: Config{Interval: time.Second}, Now: now, PassObserver: heard}
	if _, err := r.RunPass(context.Background()); err != nil {
		t.Fatal(err)
	}
	st.fail = true
	if _, err := r.RunPass(context.Background()); err == nil {
		t.Fatal("a refused publication is the pass's error")
	}
	if len(heard.reports) != 2 {
		t.Fatalf("heard %d passes, want 2", len(heard.reports))
	}
	first, second := heard.reports[0], heard.reports[1]
	// the pass's own clock measures it, from its start to its publication
	if first.Took <= 0 || first.PublishErr != nil || first.Slimmed || first.Pass.Beacon.Pass != 1 || first.Pass.Target == nil {
		t.Fatalf("first pass: %+v", first)
	}
	if second.PublishErr == nil || second.Pass.Beacon.Pass != 2 {
		t.Fatalf("second pass: %+v", second)
	}
}

// oversize makes a pass's beacon larger than readers accept.
type oversize struct{}

func (oversize) Contribute(_ context.Context, p *Pass) {
	p.Refuse("huge", "host1", "%s", strings.Repeat("y", MaxBytes))
}

func TestAnOversizedBeaconIsToldAsSlimmed(t *testing.T) {
	st := newStore(t)
	if _, err := registry.Push(context.Background(), st, fleet(), 0, "test"); err != nil {
		t.Fatal(err)
	}
	heard := &heardPasses{}
	r := &Runner{Host: "host1", Store: st, Observer: staticObserver{}, Contributors: []Contributor{oversize{}},
		Config: Config{Interval: time.Second}, Now: func() time.Time { return t0 }, PassObserver: heard}
	if _, err := r.RunPass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(heard.reports) != 1 || !heard.reports[0].Slimmed || heard.reports[0].PublishErr != nil {
		t.Fatalf("heard %+v", heard.reports)
	}
}

func TestTheHostAPIServesMetricsOnlyWhenGivenAHandler(t *testing.T) {
	st := apiStore(t, nil)
	bare := httptest.NewServer((&Runner{Host: "h1", Store: st}).APIHandler())
	defer bare.Close()
	resp, err := http.Get(bare.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("without a metrics handler: %d, want 404", resp.StatusCode)
	}
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "stado_x 1\n") })
	srv := httptest.NewServer((&Runner{Host: "h1", Store: st, MetricsHandler: metrics}).APIHandler())
	defer srv.Close()
	resp, err = http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(body) != "stado_x 1\n" {
		t.Fatalf("/metrics: %d %q", resp.StatusCode, body)
	}
}
