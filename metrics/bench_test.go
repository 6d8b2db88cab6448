package metrics

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/wisent/stado/beacon"
)

// BenchmarkPassEndedOn200Units is what reading one pass of a host with
// 200 declared units, each with an answering block, costs the pass.
func BenchmarkPassEndedOn200Units(b *testing.B) {
	m := New(t0)
	bc := &beacon.Beacon{At: t0}
	for i := range 200 {
		bc.Units = append(bc.Units, beacon.UnitReport{Service: fmt.Sprintf("s%d", i), Unit: fmt.Sprintf("s%d.service", i), State: beacon.StateActive,
			Answering: &beacon.Answering{State: beacon.AnswerWaiting}})
	}
	r := beacon.PassReport{Pass: &beacon.Pass{Beacon: bc}}
	b.ReportAllocs()
	for b.Loop() {
		m.PassEnded(r)
	}
}

// TestTheSeriesOfAHostAfterOnePass prints how many stado_ series a host
// exports and how large a scrape is (run with -v to read them).
func TestTheSeriesOfAHostAfterOnePass(t *testing.T) {
	r := hostProcess(t, New(t0))
	if _, err := r.RunPass(context.Background()); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	r.APIHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Result().Body)
	series := 0
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "stado_") {
			series++
		}
	}
	t.Logf("%d stado_ series; a scrape is %d bytes", series, len(body))
	// docs/metrics.md says about 170: a change of families shows here
	if series < 150 || series > 200 {
		t.Errorf("%d stado_ series; docs/metrics.md says about 170", series)
	}
}

// BenchmarkScrape is what one GET /metrics costs the host process after a
// pass: every family written in the text format.
func BenchmarkScrape(b *testing.B) {
	m := New(t0)
	bc := &beacon.Beacon{At: t0}
	for i := range 20 {
		bc.Units = append(bc.Units, beacon.UnitReport{Service: fmt.Sprintf("s%d", i), Unit: fmt.Sprintf("s%d.service", i), State: beacon.StateActive})
	}
	m.PassEnded(beacon.PassReport{Pass: &beacon.Pass{Beacon: bc}})
	h := m.Handler()
	req := httptest.NewRequest("GET", "/metrics", nil)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
	}
}
