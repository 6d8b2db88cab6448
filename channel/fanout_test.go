package channel

import (
	"context"
	"fmt"
	"sync"
	"testing"

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
