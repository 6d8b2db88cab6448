package beacon

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wisent/stado/declaration"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/svcproto"
)

// protocolFixture builds tests/fixtures/service-protocol, a real
// executable implementing the seven operations, into the test's own dir.
func protocolFixture(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "service-protocol")
	if out, err := exec.Command("go", "build", "-o", bin, "../tests/fixtures/service-protocol").CombinedOutput(); err != nil {
		t.Fatalf("build the fixture: %v\n%s", err, out)
	}
	return bin
}

// protoClock is a settable clock.
type protoClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *protoClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *protoClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func protocolPass(t *testing.T, e *ProtocolEvidence, svc registry.Service) *Protocol {
	t.Helper()
	p := &Pass{Host: "h1", Target: &registry.Target{Name: "h1", Services: []registry.Service{svc}},
		Beacon: &Beacon{Units: []UnitReport{{Service: svc.Name, Unit: svc.Unit, State: "active"}}}}
	e.Contribute(context.Background(), p)
	return p.Beacon.Units[0].Protocol
}

func declaredWithProtocol(t *testing.T, state string) registry.Service {
	return registry.Service{Name: "worker", Unit: "worker.service", Program: "/usr/local/bin/worker",
		Env:      map[string]string{"FIXTURE_STATE": state},
		Protocol: &declaration.ServiceProtocol{Exec: []string{protocolFixture(t)}, PeriodSeconds: 10}}
}

func writeState(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadyFalseThenTrueIsCarriedInTurn(t *testing.T) {
	state := t.TempDir()
	writeState(t, state, "running", "")
	writeState(t, state, "ready", "false")
	c := &protoClock{t: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
	e := &ProtocolEvidence{Now: c.now}
	defer e.Close()
	svc := declaredWithProtocol(t, state)

	if b := protocolPass(t, e, svc); b == nil || b.State != ProtocolPending {
		t.Fatalf("first pass: %+v, want pending", b)
	}
	e.Idle()
	b := protocolPass(t, e, svc)
	if b.State != ProtocolRead || b.Ready == nil || *b.Ready || b.Running == nil || !*b.Running {
		t.Fatalf("second pass: %+v, want read, running, not ready", b)
	}
	writeState(t, state, "ready", "true")
	// within the period nothing is read again
	c.add(5 * time.Second)
	protocolPass(t, e, svc)
	e.Idle()
	if b := protocolPass(t, e, svc); *b.Ready {
		t.Fatalf("read again inside the period: %+v", b)
	}
	c.add(6 * time.Second)
	protocolPass(t, e, svc)
	e.Idle()
	if b := protocolPass(t, e, svc); b.State != ProtocolRead || !*b.Ready {
		t.Fatalf("after the period: %+v, want ready", b)
	}
}

func TestUnreadableAnswerNamesTheOpAndTheCause(t *testing.T) {
	cases := []struct {
		name, answer, op, cause string
	}{
		{"malformed", "malformed", svcproto.OpStatus, "not one JSON document"},
		{"nonzero exit", "fail", svcproto.OpStatus, "exit 1: service-protocol: status: fixture told to fail"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			state := t.TempDir()
			writeState(t, state, "answer", tc.answer)
			e := &ProtocolEvidence{}
			defer e.Close()
			svc := declaredWithProtocol(t, state)
			protocolPass(t, e, svc)
			e.Idle()
			b := protocolPass(t, e, svc)
			if b.State != ProtocolUnreadable || b.Op != tc.op || !strings.Contains(b.Cause, tc.cause) {
				t.Fatalf("%+v, want unreadable op %s cause ~%q", b, tc.op, tc.cause)
			}
		})
	}
}

func TestASlowExecutableNeverHoldsThePass(t *testing.T) {
	release := make(chan struct{})
	e := &ProtocolEvidence{Run: func(ctx context.Context, _ []string, _ string, _ []string) ([]byte, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return []byte(`{"running":true,"ready":true}`), nil
	}}
	defer e.Close()
	svc := registry.Service{Name: "worker", Unit: "worker.service", Protocol: &declaration.ServiceProtocol{Exec: []string{"/x"}}}
	done := make(chan struct{})
	go func() {
		protocolPass(t, e, svc)
		protocolPass(t, e, svc)
		close(done)
	}()
	<-done // two passes end while the reading is held
	close(release)
	e.Idle()
	if b := protocolPass(t, e, svc); b.State != ProtocolRead {
		t.Fatalf("%+v, want read once released", b)
	}
}

func TestProbeReadsFingerprint(t *testing.T) {
	state := t.TempDir()
	e := &ProtocolEvidence{}
	defer e.Close()
	svc := declaredWithProtocol(t, state)
	svc.Protocol.Probe = true
	protocolPass(t, e, svc)
	e.Idle()
	b := protocolPass(t, e, svc)
	if b.State != ProtocolRead || b.Healthy == nil || !*b.Healthy || b.Ready != nil {
		t.Fatalf("%+v, want a fingerprint reading (healthy, no ready)", b)
	}
}
