package channel

import (
	"context"
	"sync"

	"github.com/wisent/stado/registry"
)

// DefaultParallel is the fan-out bound when none is given (--parallel).
const DefaultParallel = 16

// Result is the outcome of one host's call in a fan-out.
type Result struct {
	Index int    // position of the host in the input
	Host  string // target name
	Value any    // what fn produced, if it succeeded
	Err   error  // why it failed; a *RemoteError names host and stage
}

// FanOut calls fn for every host, at most parallel at once (DefaultParallel
// when parallel <= 0), and calls onResult (if not nil) with each result as
// it completes — from one goroutine at a time, so onResult may print without
// locking. FanOut sets Index and Host of each result. When ctx ends, hosts
// not yet started get a Result with ctx's error and fn is not called for
// them. It returns every result in input order.
func FanOut(ctx context.Context, hosts []registry.Target, parallel int, fn func(ctx context.Context, host registry.Target) Result, onResult func(Result)) []Result {
	if parallel <= 0 {
		parallel = DefaultParallel
	}
	results := make([]Result, len(hosts))
	done := make(chan Result)
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	go func() {
		defer close(done)
		for i, h := range hosts {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
			}
			if ctx.Err() != nil {
				done <- Result{Index: i, Host: h.Name, Err: ctx.Err()}
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := fn(ctx, h)
				r.Index, r.Host = i, h.Name
				<-sem
				done <- r
			}()
		}
		wg.Wait()
	}()
	for r := range done {
		results[r.Index] = r
		if onResult != nil {
			onResult(r)
		}
	}
	return results
}
