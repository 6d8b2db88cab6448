package channel

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/wisent/stado/registry"
)

func hosts(n int) []registry.Target {
	ts := make([]registry.Target, n)
	for i := range ts {
		ts[i] = registry.Target{Name: fmt.Sprintf("h%d", i)}
	}
	return ts
}

func TestFanOutNeverRunsMoreThanParallelAndReportsInCompletionOrder(t *testing.T) {
	const n, parallel = 9, 3
	started := make(chan int)
	release := make([]chan struct{}, n)
	for i := range release {
		release[i] = make(chan struct{})
	}
	var mu sync.Mutex
	inFlight, peak := 0, 0
	reported := make(chan int)
	var results []Result
	go func() {
		results = FanOut(context.Background(), hosts(n), parallel, func(ctx context.Context, h registry.Target) Result {
			var i int
			fmt.Sscanf(h.Name, "h%d", &i)
			mu.Lock()
			inFlight++
			peak = max(peak, inFlight)
			mu.Unlock()
			started <- i
			<-release[i]
			mu.Lock()
			inFlight--
			mu.Unlock()
			return Result{Value: i}
		}, func(r Result) { reported <- r.Index })
		close(reported)
	}()
	// keep `parallel` calls running and always finish the newest one first,
	// so completion order differs from input order
	var running, finished []int
	for len(finished) < n {
		for len(running) < parallel && len(running)+len(finished) < n {
			running = append(running, <-started)
		}
		last := running[len(running)-1]
		running = running[:len(running)-1]
		close(release[last])
		if got := <-reported; got != last {
			t.Fatalf("reported %d when %d completed", got, last)
		}
		finished = append(finished, last)
	}
	if _, open := <-reported; open {
		t.Fatal("more results than hosts")
	}
	if peak != parallel {
		t.Fatalf("peak of %d calls at once, want exactly %d", peak, parallel)
	}
	for i, r := range results {
		if r.Index != i || r.Host != fmt.Sprintf("h%d", i) || r.Value != i {
			t.Fatalf("results[%d] = %+v, want input order", i, r)
		}
	}
	if fmt.Sprint(finished) == fmt.Sprint([]int{0, 1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Fatal("the test did not reorder completions")
	}
}

func TestFanOutAfterCancelStartsNothingMore(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	calls := 0
	results := FanOut(ctx, hosts(5), 1, func(ctx context.Context, h registry.Target) Result {
		mu.Lock()
		calls++
		mu.Unlock()
		cancel()
		return Result{}
	}, nil)
	if calls != 1 {
		t.Fatalf("%d calls after the first cancelled the context", calls)
	}
	for _, r := range results[1:] {
		if r.Err != context.Canceled {
			t.Fatalf("%s: %v, want context.Canceled", r.Host, r.Err)
		}
	}
}

func TestFanOutDefaultsToSixteenAtOnce(t *testing.T) {
	var mu sync.Mutex
	var once sync.Once
	inFlight, peak := 0, 0
	gate := make(chan struct{}) // closed once 16 calls run at the same time
	FanOut(context.Background(), hosts(40), 0, func(ctx context.Context, h registry.Target) Result {
		mu.Lock()
		inFlight++
		peak = max(peak, inFlight)
		if inFlight == DefaultParallel {
			once.Do(func() { close(gate) })
		}
		mu.Unlock()
		<-gate
		mu.Lock()
		inFlight--
		mu.Unlock()
		return Result{}
	}, nil)
	if peak != DefaultParallel {
		t.Fatalf("peak %d, want %d", peak, DefaultParallel)
	}
}

// settleHosts is a fan-out over in-process hosts: each "dials" (counted
// while it does), hands its request over (ReleaseSlot) and then waits for
// its unit to settle, which ends for every host once all of them settle
// at the same time, or after settle for a test to fail on.
type settleHosts struct {
	mu                   sync.Mutex
	dialing, dialPeak    int
	settling, settlePeak int
	allSettling          chan struct{}
	n                    int
	releasesSlot         bool
	settle               time.Duration // the longest a host waits for all to settle
}

func (s *settleHosts) call(ctx context.Context, h registry.Target) Result {
	s.mu.Lock()
	s.dialing++
	s.dialPeak = max(s.dialPeak, s.dialing)
	s.mu.Unlock()
	runtime.Gosched() // a dial: give the other hosts a chance to dial beside it
	s.mu.Lock()
	s.dialing--
	s.mu.Unlock()
	if s.releasesSlot {
		ReleaseSlot(ctx)
		ReleaseSlot(ctx) // twice is once
	}
	s.mu.Lock()
	s.settling++
	s.settlePeak = max(s.settlePeak, s.settling)
	if s.settling == s.n {
		close(s.allSettling)
	}
	s.mu.Unlock()
	select { // the settle: over once every host is settling, or never
	case <-s.allSettling:
	case <-time.After(s.settle):
	}
	s.mu.Lock()
	s.settling--
	s.mu.Unlock()
	return Result{Value: h.Name}
}

func TestFanOutHostsWaitingForTheirUnitHoldNoSlotSoAllSettleInOneWave(t *testing.T) {
	const n, parallel = 64, 4
	s := &settleHosts{n: n, allSettling: make(chan struct{}), releasesSlot: true, settle: 5 * time.Second}
	results := FanOut(context.Background(), hosts(n), parallel, s.call, nil)
	if s.settlePeak != n {
		t.Fatalf("at most %d of %d hosts settled at once with --parallel %d, want all of them in one wave", s.settlePeak, n, parallel)
	}
	if s.dialPeak > parallel {
		t.Fatalf("%d hosts dialed at once, want at most %d", s.dialPeak, parallel)
	}
	for i, r := range results {
		if r.Index != i || r.Host != fmt.Sprintf("h%d", i) || r.Value != r.Host || r.Err != nil {
			t.Fatalf("results[%d] = %+v, want host h%d's own result in input order", i, r, i)
		}
	}
}

func TestFanOutAHostThatNeverReleasesItsSlotHoldsItToTheEnd(t *testing.T) {
	const n, parallel = 12, 3
	s := &settleHosts{n: n, allSettling: make(chan struct{}), settle: 20 * time.Millisecond}
	FanOut(context.Background(), hosts(n), parallel, s.call, nil)
	if s.settlePeak > parallel {
		t.Fatalf("%d hosts at once, want at most %d when none releases its slot", s.settlePeak, parallel)
	}
}

func TestFanOutCallsInFlightStayUnderMaxInFlight(t *testing.T) {
	n := MaxInFlight + 16
	gate := make(chan struct{})
	var mu sync.Mutex
	inFlight, peak := 0, 0
	go func() {
		// let the fan-out fill up, then let every call finish
		for {
			mu.Lock()
			full := inFlight == MaxInFlight
			mu.Unlock()
			if full {
				break
			}
			time.Sleep(time.Millisecond)
		}
		time.Sleep(10 * time.Millisecond) // time for one more to start, were the bound broken
		close(gate)
	}()
	FanOut(context.Background(), hosts(n), 8, func(ctx context.Context, h registry.Target) Result {
		ReleaseSlot(ctx)
		mu.Lock()
		inFlight++
		peak = max(peak, inFlight)
		mu.Unlock()
		<-gate
		mu.Lock()
		inFlight--
		mu.Unlock()
		return Result{}
	}, nil)
	if peak != MaxInFlight {
		t.Fatalf("peak of %d calls in flight, want %d", peak, MaxInFlight)
	}
}

func TestFanOutAfterCancelStartsNothingMoreWhileOthersSettle(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	var mu sync.Mutex
	calls := 0
	results := make(chan []Result)
	go func() {
		results <- FanOut(ctx, hosts(20), 2, func(ctx context.Context, h registry.Target) Result {
			mu.Lock()
			calls++
			if calls == 5 {
				cancel()
			}
			mu.Unlock()
			ReleaseSlot(ctx) // at most 2 slots: when the 5th cancels, at most 6 have started
			<-release
			return Result{Err: ctx.Err()}
		}, nil)
	}()
	time.Sleep(20 * time.Millisecond)
	close(release)
	rs := <-results
	if calls < 5 || calls > 6 {
		t.Fatalf("%d calls, want the fan-out to stop starting hosts once ctx ended at the 5th", calls)
	}
	for _, r := range rs {
		if r.Err != context.Canceled {
			t.Fatalf("%s: %v, want context.Canceled", r.Host, r.Err)
		}
	}
}
