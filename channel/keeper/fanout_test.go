package keeper

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

func TestACallThroughTheKeeperGivesBackItsFanOutSlotOnceTheCommandRuns(t *testing.T) {
	const n, parallel = 8, 2
	f := newFixture(t)
	k := startKeeper(t, Config{})
	var mu sync.Mutex
	running, peak := 0, 0
	all := make(chan struct{})
	f.srv.SetHandler(func(cmd string, stdin io.Reader, stdout, _ io.Writer) int {
		_, _ = io.ReadAll(stdin)
		mu.Lock()
		running++
		peak = max(peak, running)
		if running == n {
			close(all)
		}
		mu.Unlock()
		select { // the unit settling: over once all n settle together
		case <-all:
		case <-time.After(5 * time.Second): // only when the bound is broken
		}
		mu.Lock()
		running--
		mu.Unlock()
		io.WriteString(stdout, cmd)
		return 0
	})
	kc := &Client{Socket: k.socket}
	var targets []registry.Target
	for i := range n {
		targets = append(targets, f.srv.Target(fmt.Sprintf("h%d", i)))
	}
	results := channel.FanOut(context.Background(), targets, parallel, func(ctx context.Context, h registry.Target) channel.Result {
		out, _, err := kc.Run(ctx, h, f.dialer(), []string{"settle", h.Name}, []byte("request"))
		return channel.Result{Value: string(out), Err: err}
	}, nil)
	for i, r := range results {
		if r.Err != nil || r.Value != "settle "+targets[i].Name {
			t.Fatalf("%s: %q, %v; want its own answer", r.Host, r.Value, r.Err)
		}
	}
	if peak != n {
		t.Fatalf("at most %d of %d commands ran at once through the keeper with --parallel %d, want all", peak, n, parallel)
	}
}
