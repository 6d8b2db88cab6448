package repair

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/register"
	"github.com/wisent/stado/registry"
)

// gatedHost holds every repair step until its gate opens, counting how
// many run at once: a 60 s step on a slow host, without the minute.
type gatedHost struct {
	channel.Host
	gate chan struct{}

	mu       sync.Mutex
	now, max int
}

func (g *gatedHost) RepairStep(ctx context.Context, req channel.StepRequest) (channel.StepResult, error) {
	g.mu.Lock()
	g.now++
	g.max = max(g.max, g.now)
	g.mu.Unlock()
	select {
	case <-g.gate:
	case <-ctx.Done():
	}
	g.mu.Lock()
	g.now--
	g.mu.Unlock()
	return g.Host.RepairStep(ctx, req)
}

// contributeReturns runs one peer pass and fails the test if the pass does
// not return while the gated steps are held (it would block forever).
func contributeReturns(t *testing.T, r *peerRig) *beacon.Beacon {
	t.Helper()
	if err := r.pub.Publish(); err != nil {
		t.Fatal(err)
	}
	done := make(chan *beacon.Beacon, 1)
	go func() { done <- r.passOnly() }()
	select {
	case b := <-done:
		return b
	case <-time.After(30 * time.Second):
		t.Fatal("the pass did not return while peer repair steps were running")
		return nil
	}
}

// states is each block's service and what it says: a recovery's state, or
// not_recovered.
func states(t *testing.T, b *beacon.Beacon) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, blk := range b.PeerRecoveries {
		switch {
		case blk.NotRecovered != "":
			out[blk.Service] = "not_recovered: " + blk.NotRecovered
		case blk.AlreadyRecovered:
			out[blk.Service] = "already_recovered"
		case len(blk.Recovery) > 0:
			rec := peerRecovery(t, blk)
			out[blk.Service] = rec.State
			if rec.State == register.Attempted && rec.Complete {
				out[blk.Service] += " complete"
			}
		default:
			out[blk.Service] = "?"
		}
	}
	return out
}

// Three services of host2 stand at once while every repair step hangs: the
// pass returns at once, two recoveries run (the default cap), the third
// waits for a free slot, and the passes after the steps end carry their
// outcomes, then start the third.
func TestPeerRecoveriesRunOffThePassAtMostTwoAtOnce(t *testing.T) {
	r := newPeerRig(t, 2, "[noop]")
	g := &gatedHost{Host: r.host, gate: make(chan struct{})}
	r.peer.Connect = func(registry.Target) channel.Host { return g }
	t.Cleanup(func() {
		select {
		case <-g.gate:
		default:
			close(g.gate)
		}
		r.peer.Close()
	})
	var fixtures []*fixture
	for _, s := range []string{"a", "b", "c"} {
		fixtures = append(fixtures, r.declare(s, "peer-hold", serving, modeNever))
		r.wait(s, serving, true)
	}
	r.clock.Advance(3 * time.Second)

	first := states(t, contributeReturns(t, r))
	if first["a"] != register.Running || first["b"] != register.Running || !strings.Contains(first["c"], "2 peer recoveries already run") {
		t.Fatalf("first pass: %v", first)
	}
	// while the steps hang, every pass returns and says the same
	r.clock.Advance(time.Second)
	second := states(t, contributeReturns(t, r))
	if second["a"] != register.Running || second["b"] != register.Running || !strings.HasPrefix(second["c"], "not_recovered") {
		t.Fatalf("second pass: %v", second)
	}
	if n := fixtures[0].restartCount() + fixtures[1].restartCount() + fixtures[2].restartCount(); n != 0 {
		t.Fatalf("%d restarts before the steps ended", n)
	}

	close(g.gate)
	r.peer.Wait()
	r.clock.Advance(time.Second)
	third := states(t, contributeReturns(t, r))
	if third["a"] != "attempted complete" || third["b"] != "attempted complete" || third["c"] != register.Running {
		t.Fatalf("third pass: %v", third)
	}
	r.peer.Wait()
	r.clock.Advance(time.Second)
	fourth := states(t, contributeReturns(t, r))
	if fourth["a"] != "already_recovered" || fourth["c"] != "attempted complete" {
		t.Fatalf("fourth pass: %v", fourth)
	}
	if g.max != 2 {
		t.Fatalf("at most %d steps ran at once, want 2", g.max)
	}
	if rows := r.rows(); len(rows) != 3 {
		t.Fatalf("register rows = %d, want 3", len(rows))
	}
}

// The cap is the observer's setting.
func TestPeerConcurrencyIsConfigurable(t *testing.T) {
	r := newPeerRig(t, 2, "[noop]")
	g := &gatedHost{Host: r.host, gate: make(chan struct{})}
	r.peer.Connect, r.peer.Concurrency = func(registry.Target) channel.Host { return g }, 3
	for _, s := range []string{"a", "b", "c"} {
		r.declare(s, "peer-hold", serving, modeNever)
		r.wait(s, serving, true)
	}
	r.clock.Advance(3 * time.Second)
	got := states(t, contributeReturns(t, r))
	close(g.gate)
	r.peer.Close()
	for _, s := range []string{"a", "b", "c"} {
		if got[s] != register.Running {
			t.Fatalf("with a cap of 3: %v", got)
		}
	}
}

// A restart ends the held requests, so the standing is gone by the next
// pass; that pass still carries the attempt's outcome, once.
func TestPeerOutcomeIsCarriedOnceAfterItsStandingEnded(t *testing.T) {
	r := newPeerRig(t, 2, "[noop]")
	r.declare("brama", "peer-hold", serving, modeNever)
	w := r.wait("brama", serving, true)
	r.clock.Advance(3 * time.Second)
	if got := states(t, contributeReturns(t, r)); got["brama"] != register.Running {
		t.Fatalf("first: %v", got)
	}
	r.peer.Wait()
	w.Done()
	r.clock.Advance(time.Second)
	b := contributeReturns(t, r)
	if got := states(t, b); got["brama"] != "attempted complete" || len(b.PeerRecoveries) != 1 {
		t.Fatalf("after the standing ended: %v", got)
	}
	r.clock.Advance(time.Second)
	if b := contributeReturns(t, r); len(b.PeerRecoveries) != 0 {
		t.Fatalf("the outcome was carried again: %+v", b.PeerRecoveries)
	}
}
