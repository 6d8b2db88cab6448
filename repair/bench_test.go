package repair

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/register"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/units"
)

// noopManager restarts nothing and says done, so a benchmark's standing
// services keep standing (and read already_attempted after one attempt).
type noopManager struct{ units.Manager }

func (noopManager) Restart(context.Context, string) error { return nil }
func (noopManager) Show(_ context.Context, u string) (units.Verdict, error) {
	return units.Verdict{Unit: u, State: units.StateActive, PID: 1}, nil
}

// benchHost declares n answering services on one host, standing of them on
// a listener that never answers and the rest on one that answers 200.
func benchHost(b *testing.B, n, standing int, now func() time.Time) (*Answerer, func() *beacon.Pass) {
	ok := startFixture(b, modeOK, "")
	never := startFixture(b, modeNever, "")
	cat := siteCatalog(b, "/nonexistent", "")
	a := &Answerer{Catalog: cat, Now: now, Register: register.Home(b.TempDir()),
		Host: testHost(func() *catalog.Catalog { return cat }, noopManager{}, now)}
	b.Cleanup(a.Close)
	doc := &registry.Document{Version: 1, ServiceResolver: registry.ServiceResolver{RefreshSeconds: 1},
		Targets: []registry.Target{{Name: "h1", OS: registry.OSLinux, SSH: registry.SSH{Address: "127.0.0.1"}}}}
	for i := 0; i < n; i++ {
		name, product, port := fmt.Sprintf("svc-%03d", i), "fixture-ok", ok.port
		if i < standing {
			product, port = "fixture-never", never.port
		}
		doc.Targets[0].Services = append(doc.Targets[0].Services, registry.Service{Name: name, Unit: name + ".service", Product: product})
		doc.Directory = append(doc.Directory, registry.DirectoryEntry{Service: name, Host: "h1", Port: port})
	}
	var num int64
	mk := func() *beacon.Pass {
		num++
		bc := &beacon.Beacon{Units: make([]beacon.UnitReport, 0, n)}
		for _, s := range doc.Targets[0].Services {
			bc.Units = append(bc.Units, beacon.UnitReport{Service: s.Name, Unit: s.Unit, State: "active"})
		}
		return &beacon.Pass{Number: num, Host: "h1", Document: doc, Target: &doc.Targets[0], Beacon: bc}
	}
	return a, mk
}

// BenchmarkPass200Services50Standing measures one Contribute over 200
// answering services of which 50 stand: the pass only reads records and
// starts goroutines, so it must stay far below 100 ms.
func BenchmarkPass200Services50Standing(b *testing.B) {
	c := newClock()
	a, mk := benchHost(b, 200, 50, c.Now)
	a.Contribute(context.Background(), mk())
	time.Sleep(200 * time.Millisecond) // let the first questions land
	var worst time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.Advance(600 * time.Millisecond) // every other pass, the 50 stand
		p := mk()
		start := time.Now()
		a.Contribute(context.Background(), p)
		if d := time.Since(start); d > worst {
			worst = d
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(worst.Microseconds())/1000, "worst-ms")
}

// BenchmarkDetectionLatency measures, on the real clock, how long after a
// question is sent a pass reads it stood, with a 1 s bound and passes
// every 250 ms; the target is bound + interval + 1 s.
func BenchmarkDetectionLatency(b *testing.B) {
	const interval = 250 * time.Millisecond
	var total, worst time.Duration
	for i := 0; i < b.N; i++ {
		a, mk := benchHost(b, 1, 1, nil)
		start := time.Now()
		for {
			p := mk()
			a.Contribute(context.Background(), p)
			if p.Beacon.Units[0].Answering.State == beacon.AnswerStood {
				break
			}
			time.Sleep(interval)
		}
		d := time.Since(start)
		total += d
		worst = max(worst, d)
		a.Close()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "detect-ms")
	b.ReportMetric(float64(worst.Milliseconds()), "worst-detect-ms")
}
