package desktop_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/desktop"
	"github.com/wisent/stado/store"
)

// The scale of the issue: 1,000 hosts × 20 services, one in fifty failing.
const benchHosts, benchServices = 1000, 20

func bigFleet(tb testing.TB) store.Store {
	return fleetFixture(tb, benchHosts, benchServices, t0, func(b *beacon.Beacon) {
		for i := range b.Units {
			if (i+int(b.Host[len(b.Host)-1]))%50 == 0 {
				b.Units[i].State, b.Units[i].LastExit, b.Units[i].Starts, b.Units[i].LastStderr = beacon.StateFailing, intp(1), 4, "boom"
			}
		}
	})
}

func benchGet(b *testing.B, store store.Store, path string) {
	srv, err := desktop.New(desktop.Config{Store: store, Now: func() time.Time { return t0 }, Refresh: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	h := srv.Handler()
	do := func() int {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Host = "127.0.0.1:7480"
		req.AddCookie(&http.Cookie{Name: desktop.CookieName("0"), Value: srv.Token()})
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatalf("GET %s: %d", path, w.Code)
		}
		return w.Body.Len()
	}
	size := do() // the store is read once; every render below judges its 20,000 rows afresh
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		do()
	}
	b.ReportMetric(float64(size), "bytes/page")
}

// BenchmarkDesktopFirstPage1000x20 renders the whole page (the first of
// its pages of rows) for the fleet.
func BenchmarkDesktopFirstPage1000x20(b *testing.B) { benchGet(b, bigFleet(b), "/") }

// BenchmarkDesktopFilter1000x20 renders the rows a search keeps.
func BenchmarkDesktopFilter1000x20(b *testing.B) { benchGet(b, bigFleet(b), "/rows?q=host0999+s1") }

// BenchmarkDesktopProblems1000x20 renders the rows that are not healthy.
func BenchmarkDesktopProblems1000x20(b *testing.B) { benchGet(b, bigFleet(b), "/rows?mark=problems") }

// BenchmarkDesktopReadStore1000x20 reads the store's registry and 1,000
// beacons as the page does when the store changed.
func BenchmarkDesktopReadStore1000x20(b *testing.B) {
	st := bigFleet(b)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if _, err := beacon.LoadView(ctx, st, t0, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDesktopJudgeRows1000x20 renders the first page with a clock one
// second further at every request, so all 20,000 rows are judged afresh
// (within one second the judged rows are reused).
func BenchmarkDesktopJudgeRows1000x20(b *testing.B) {
	st := bigFleet(b)
	now := t0
	srv, err := desktop.New(desktop.Config{Store: st, Now: func() time.Time { now = now.Add(time.Second); return now }, Refresh: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	h := srv.Handler()
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodGet, "/rows", nil)
		req.Host = "127.0.0.1:7480"
		req.AddCookie(&http.Cookie{Name: desktop.CookieName("0"), Value: srv.Token()})
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatalf("GET /rows: %d", w.Code)
		}
	}
}

// BenchmarkDesktopSummary1000x20 answers the summary alone as JSON.
func BenchmarkDesktopSummary1000x20(b *testing.B) {
	benchGet(b, bigFleet(b), "/summary?format=json")
}
