package autonomy

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// fakeActor acts by sleeping a little; it records how many hosts, and how
// many hosts of each service, it was acting on at the worst instant, and
// fails the hosts named in fail.
type fakeActor struct {
	mu         sync.Mutex
	now, peak  int
	perService map[string]int
	peakSvc    map[string]int
	fail       map[string]bool
	acted      []string
}

func (a *fakeActor) ActOn(ctx context.Context, host string, rows []*Row, proceed func() bool, done func(*Row)) {
	a.mu.Lock()
	a.now++
	a.peak = max(a.peak, a.now)
	for _, r := range rows {
		a.perService[r.Service]++
		a.peakSvc[r.Service] = max(a.peakSvc[r.Service], a.perService[r.Service])
	}
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.now--
		for _, r := range rows {
			a.perService[r.Service]--
		}
		a.mu.Unlock()
	}()
	for _, r := range rows {
		if !proceed() {
			return
		}
		time.Sleep(5 * time.Millisecond)
		a.mu.Lock()
		a.acted = append(a.acted, host)
		a.mu.Unlock()
		r.Result = &ActionResult{Action: r.Action, OK: !a.fail[host], Clean: !a.fail[host]}
		done(r)
	}
}

func brokenRows(n int, service string) []Row {
	var rows []Row
	for i := 1; i <= n; i++ {
		rows = append(rows, Row{Host: fmt.Sprintf("host%d", i), Service: service, Unit: service + ".service", Action: ActionRestore})
	}
	return rows
}

func TestEnforceNeverActsOnMoreHostsAtOnceThanItsCap(t *testing.T) {
	a := &fakeActor{perService: map[string]int{}, peakSvc: map[string]int{}}
	rows := brokenRows(10, "s")
	failed, stopped := Enforce(context.Background(), rows, Caps{MaxConcurrent: 3, MaxFraction: 1, FailureBudget: 10}, func(string) int { return 10 }, a)
	if failed != 0 || stopped != "" || len(a.acted) != 10 {
		t.Fatalf("failed %d stopped %q acted %v", failed, stopped, a.acted)
	}
	if a.peak > 3 {
		t.Errorf("%d hosts at once, cap 3", a.peak)
	}
}

func TestEnforceHoldsAServiceToItsShareOfHosts(t *testing.T) {
	a := &fakeActor{perService: map[string]int{}, peakSvc: map[string]int{}}
	rows := append(brokenRows(8, "s"), Row{Host: "host9", Service: "other", Action: ActionStart})
	Enforce(context.Background(), rows, Caps{MaxConcurrent: 8, MaxFraction: 0.25, FailureBudget: 10}, func(s string) int {
		if s == "s" {
			return 8
		}
		return 1
	}, a)
	if a.peakSvc["s"] > 2 {
		t.Errorf("%d of s's 8 hosts at once, share 0.25", a.peakSvc["s"])
	}
	if len(a.acted) != 9 {
		t.Errorf("acted on %v", a.acted)
	}
}

func TestEnforceStopsAtItsFailureBudgetAndRecordsTheRestNotAttempted(t *testing.T) {
	a := &fakeActor{perService: map[string]int{}, peakSvc: map[string]int{}, fail: map[string]bool{"host1": true, "host2": true, "host3": true, "host4": true}}
	rows := brokenRows(4, "s")
	failed, stopped := Enforce(context.Background(), rows, Caps{MaxConcurrent: 1, MaxFraction: 1, FailureBudget: 2}, func(string) int { return 4 }, a)
	if failed != 2 || stopped == "" {
		t.Fatalf("failed %d stopped %q", failed, stopped)
	}
	for i, r := range rows {
		switch {
		case i < 2 && (r.Result == nil || r.Result.OK):
			t.Errorf("row %d: %+v", i, r)
		case i >= 2 && (r.Result != nil || r.Refusal == nil || r.Refusal.Code != CodeNotAttempted || r.Action != ActionRestore):
			t.Errorf("row %d should be not_attempted, keeping its action: %+v", i, r)
		}
	}
}

func TestEnforceLeavesRefusedAndSettledRowsAlone(t *testing.T) {
	a := &fakeActor{perService: map[string]int{}, peakSvc: map[string]int{}}
	rows := []Row{{Host: "h1", Service: "s", Action: ActionNone}, {Host: "h2", Service: "s", Refusal: &Refusal{Code: CodeUnreachable}}}
	Enforce(context.Background(), rows, DefaultCaps, func(string) int { return 2 }, a)
	if len(a.acted) != 0 || rows[0].Result != nil || rows[1].Result != nil {
		t.Errorf("acted on %v", a.acted)
	}
}
