package keeper

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/channel/sshclient"
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

func TestWithNoKeeperRunningACommandDialsItselfAndLeavesOneStartedForTheNext(t *testing.T) {
	f := newFixture(t)
	sock := keeperSocketPath(t)
	var starts atomic.Int32
	var k *runningKeeper
	kc := &Client{Socket: sock, StartBehind: true, Start: func() error {
		starts.Add(1)
		k = launchKeeper(t, Config{Socket: sock})
		return nil
	}}
	// this command: its pool finds no keeper and dials every host itself,
	// at a cold call's cost, whether the started keeper answers meanwhile or not
	pool := sshclient.NewPool(f.dialer())
	pool.Transport = kc
	defer pool.Close()
	var targets []registry.Target
	for i := range 6 {
		targets = append(targets, f.srv.Target(fmt.Sprintf("h%d", i)))
	}
	for round := range 2 {
		for _, r := range channel.FanOut(context.Background(), targets, 3, func(ctx context.Context, h registry.Target) channel.Result {
			out, _, err := pool.Run(ctx, h, []string{"version"}, nil)
			return channel.Result{Value: string(out), Err: err}
		}, nil) {
			if r.Err != nil || r.Value != "version" {
				t.Fatalf("round %d, %s: %q, %v", round+1, r.Host, r.Value, r.Err)
			}
		}
		if round == 0 {
			waitUntil(t, "the started keeper answers", func() bool {
				c, err := net.Dial("unix", sock)
				if err == nil {
					c.Close()
				}
				return err == nil
			})
		}
	}
	if starts.Load() != 1 {
		t.Fatalf("%d keepers started, want 1", starts.Load())
	}
	if n := f.srv.Accepted.Load(); n != int32(len(targets)) {
		t.Fatalf("%d connections for %d hosts over two rounds, want one each (the pool's own)", n, len(targets))
	}
	// the next command rides the keeper
	next := &Client{Socket: sock, StartBehind: true, Start: func() error { starts.Add(1); return nil }}
	if out, _, err := next.Run(context.Background(), targets[0], f.dialer(), []string{"version"}, nil); err != nil || string(out) != "version" {
		t.Fatalf("the next command through the keeper: %q, %v", out, err)
	}
	if starts.Load() != 1 || k == nil {
		t.Fatalf("%d keepers started, want the one", starts.Load())
	}
}
