package spread

import (
	"sync"
	"testing"
)

// Every item is handed on exactly once, in runs of the size asked for.
func TestRunsCoverEveryItemOnceInRunsOfTheSizeAsked(t *testing.T) {
	for _, tc := range []struct{ n, run int }{{0, 4}, {1, 4}, {4, 4}, {5, 4}, {1000, 64}, {999, 1}, {3, 0}} {
		var mu sync.Mutex
		seen := make([]int, max(tc.n, 0))
		Runs(tc.n, tc.run, func(lo, hi int) {
			if hi-lo > tc.run || (hi < tc.n && hi-lo != tc.run) || lo%tc.run != 0 {
				t.Errorf("n %d run %d: handed [%d, %d)", tc.n, tc.run, lo, hi)
			}
			mu.Lock()
			defer mu.Unlock()
			for i := lo; i < hi; i++ {
				seen[i]++
			}
		})
		for i, c := range seen {
			if c != 1 && tc.run > 0 {
				t.Fatalf("n %d run %d: item %d handed on %d times", tc.n, tc.run, i, c)
			}
		}
	}
}
