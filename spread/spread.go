// Package spread runs fleet-size work on every processor the process may
// use, a run of consecutive items at a time: the registry's targets while
// it is decoded, the read half's join and the autonomy cycle's plan. It
// imports no stado package.
package spread

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Runs calls fn(lo, hi) for the runs [0, run), [run, 2·run), … that cover
// [0, n), on up to GOMAXPROCS goroutines that claim the runs in turn, and
// returns once every call has returned. A goroutine busy elsewhere leaves
// its share to the others. fn is called concurrently on disjoint runs; n or
// run not positive calls it never.
func Runs(n, run int, fn func(lo, hi int)) {
	if n <= 0 || run <= 0 {
		return
	}
	runs := (n + run - 1) / run
	if runs == 1 {
		fn(0, n)
		return
	}
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range min(runtime.GOMAXPROCS(0), runs) {
		wg.Go(func() {
			for k := int(next.Add(1)) - 1; k < runs; k = int(next.Add(1)) - 1 {
				fn(k*run, min((k+1)*run, n))
			}
		})
	}
	wg.Wait()
}
