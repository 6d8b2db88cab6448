package cli

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wisent/stado/autonomy"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/fleet"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

// sweptHost answers the cycle's sweep and cancels the run at its third call.
type sweptHost struct {
	channel.Host
	mu     sync.Mutex
	calls  int
	cancel func()
}

func (h *sweptHost) OS() string { return registry.OSLinux }

func (h *sweptHost) Verify(_ context.Context, req channel.VerifyRequest) (channel.VerifyResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.calls++; h.calls == 3 {
		h.cancel()
	}
	return channel.VerifyResult{Units: make([]channel.UnitCheck, len(req.Services))}, nil
}

func TestOptimizeEveryKeepsOneSetOfConnectionsAcrossItsCycles(t *testing.T) {
	dir := t.TempDir()
	st, err := store.OpenFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	doc := &registry.Document{Version: 1, Targets: []registry.Target{{Name: "h1", OS: registry.OSLinux, SSH: registry.SSH{Address: "127.0.1.1"}}}}
	if _, err := registry.Push(context.Background(), st, doc, 0, "test"); err != nil {
		t.Fatal(err)
	}
	st.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	host := &sweptHost{cancel: cancel}
	var out, errb bytes.Buffer
	env := NewEnv(strings.NewReader(""), &out, &errb)
	env.StoreURL, env.JSON = "file://"+dir, true
	opened, closed := 0, 0
	connect := func() (fleet.Connector, func()) {
		opened++
		return func(registry.Target) channel.Host { return host }, func() { closed++ }
	}
	o := optimizeRunOptions{Every: time.Millisecond, Options: autonomy.Options{Mode: registry.AutonomyReport}}
	if err := runOptimize(ctx, env, o, connect); err != nil {
		t.Fatal(err)
	}
	if host.calls < 3 || opened != 1 || closed != 1 {
		t.Fatalf("%d sweeps over %d connection set(s) opened, %d closed; want one set for every cycle\n%s", host.calls, opened, closed, errb.String())
	}
	if n := strings.Count(out.String(), "\n"); n < 2 {
		t.Errorf("%d cycle line(s) printed:\n%s", n, out.String())
	}
}
