package channel

import (
	"context"
	"sync"

	"github.com/wisent/stado/registry"
)

// DefaultParallel is the fan-out bound when none is given (--parallel): how
// many hosts at once may be dialing, handshaking or sending their request.
// Chosen from channel/sshclient's BenchmarkFanOutSettle (docs/commands.md,
// --parallel): once a host's request is sent its slot is free, so the bound
// paces only the workstation's own work; a cold fan-out to 100 hosts took
// the same at 4 to 32 on 2 cores and longer at 64 and more, where
// handshakes only contend for the CPU. 16 leaves room for handshakes that
// wait on the network.
const DefaultParallel = 16

// MaxInFlight bounds how many hosts of one fan-out may have a call in
// flight at once, slot released or not: the hosts settling and confirming
// while the workstation waits. It is far above any --parallel, so a fleet
// of a few hundred hosts waits for its units in one wave.
const MaxInFlight = 1024

// Result is the outcome of one host's call in a fan-out.
type Result struct {
	Index int    // position of the host in the input
	Host  string // target name
	Value any    // what fn produced, if it succeeded
	Err   error  // why it failed; a *RemoteError names host and stage
}

type slotKey struct{}

// slot is one host's share of a fan-out's parallel bound.
type slot struct {
	once    sync.Once
	release func()
}

// ReleaseSlot gives back the fan-out slot ctx carries, if any, once: a Host
// calls it when its request has been sent and what remains is waiting for
// the host (the unit settling, the confirmation), which costs the
// workstation nothing. Later calls, and calls on a ctx from no fan-out, do
// nothing. A Host that never calls it holds the slot until its fn returns.
func ReleaseSlot(ctx context.Context) {
	if s, ok := ctx.Value(slotKey{}).(*slot); ok {
		s.once.Do(s.release)
	}
}

// FanOut calls fn for every host, in input order, and returns every result
// in input order. At most parallel hosts (DefaultParallel when parallel <=
// 0) hold a slot at once: a host takes one before fn is called and gives it
// back when fn returns or, earlier, when fn's Host calls ReleaseSlot on the
// ctx it was handed (its request is sent). So parallel bounds the dials,
// handshakes and request transfers under way, while hosts that only wait
// for their answer run on, at most MaxInFlight at once. onResult (if not
// nil) gets each result as it completes — from one goroutine at a time, so
// onResult may print without locking. FanOut sets Index and Host of each
// result. When ctx ends, hosts not yet started get a Result with ctx's
// error and fn is not called for them.
func FanOut(ctx context.Context, hosts []registry.Target, parallel int, fn func(ctx context.Context, host registry.Target) Result, onResult func(Result)) []Result {
	if parallel <= 0 {
		parallel = DefaultParallel
	}
	results := make([]Result, len(hosts))
	done := make(chan Result)
	slots := make(chan struct{}, parallel)
	inFlight := make(chan struct{}, max(parallel, MaxInFlight))
	var wg sync.WaitGroup
	go func() {
		defer close(done)
		for i, h := range hosts {
			select {
			case inFlight <- struct{}{}:
				select {
				case slots <- struct{}{}:
				case <-ctx.Done():
					<-inFlight
				}
			case <-ctx.Done():
			}
			if ctx.Err() != nil {
				done <- Result{Index: i, Host: h.Name, Err: ctx.Err()}
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := &slot{release: func() { <-slots }}
				r := fn(context.WithValue(ctx, slotKey{}, s), h)
				s.once.Do(s.release)
				r.Index, r.Host = i, h.Name
				<-inFlight
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
