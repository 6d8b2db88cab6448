package sshclient

import (
	"context"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/registry"
)

// settlingServer answers every command once all n of them run at the same
// time (each host's unit settling), or after a while for the test to fail
// on; it records the most that ran at once and what each read on stdin.
type settlingServer struct {
	mu        sync.Mutex
	running   int
	peak      int
	all       chan struct{}
	n         int
	stdinSeen map[string]int
}

func (s *settlingServer) handle(cmd string, stdin io.Reader, stdout, _ io.Writer) int {
	b, _ := io.ReadAll(stdin)
	s.mu.Lock()
	s.stdinSeen[string(b)]++
	s.running++
	s.peak = max(s.peak, s.running)
	if s.running == s.n {
		close(s.all)
	}
	s.mu.Unlock()
	select {
	case <-s.all:
	case <-time.After(5 * time.Second): // only when the bound is broken
	}
	s.mu.Lock()
	s.running--
	s.mu.Unlock()
	io.WriteString(stdout, cmd)
	return 0
}

func TestPoolGivesBackTheFanOutSlotOnceTheRequestIsSent(t *testing.T) {
	for _, stdin := range []string{"", "the request document"} {
		t.Run(fmt.Sprintf("stdin=%q", stdin), func(t *testing.T) {
			const n, parallel = 10, 2
			f := newFixture(t)
			s := &settlingServer{n: n, all: make(chan struct{}), stdinSeen: map[string]int{}}
			f.srv.SetHandler(s.handle)
			pool := NewPool(f.dialer())
			defer pool.Close()
			var targets []registry.Target
			for i := range n {
				targets = append(targets, f.srv.Target(fmt.Sprintf("h%d", i))) // one connection each
			}
			var in []byte
			if stdin != "" {
				in = []byte(stdin)
			}
			results := channel.FanOut(context.Background(), targets, parallel, func(ctx context.Context, h registry.Target) channel.Result {
				out, _, err := pool.Run(ctx, h, []string{"settle", h.Name}, in)
				return channel.Result{Value: string(out), Err: err}
			}, nil)
			for i, r := range results {
				if r.Err != nil || r.Value != "settle "+targets[i].Name {
					t.Fatalf("%s: %q, %v; want its own answer", r.Host, r.Value, r.Err)
				}
			}
			if s.peak != n {
				t.Fatalf("at most %d of %d commands ran at once with --parallel %d, want all of them", s.peak, n, parallel)
			}
			if s.stdinSeen[stdin] != n {
				t.Fatalf("stdin seen by the hosts: %v, want %q %d times", s.stdinSeen, stdin, n)
			}
			if got := f.srv.Accepted.Load(); got != n {
				t.Fatalf("%d connections for %d hosts", got, n)
			}
		})
	}
}
