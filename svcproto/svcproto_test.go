package svcproto

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/registry"
)

// fixture is the tests' build of tests/fixtures/service-protocol, a real
// executable implementing the seven operations.
var (
	fixtureOnce sync.Once
	fixturePath string
	fixtureErr  error
)

func fixture(t *testing.T) string {
	t.Helper()
	fixtureOnce.Do(func() {
		dir, err := os.MkdirTemp("", "svcproto-fixture")
		if err != nil {
			fixtureErr = err
			return
		}
		fixturePath = filepath.Join(dir, "service-protocol")
		out, err := exec.Command("go", "build", "-o", fixturePath, "../tests/fixtures/service-protocol").CombinedOutput()
		if err != nil {
			fixtureErr = errors.New(string(out))
		}
	})
	if fixtureErr != nil {
		t.Fatalf("build fixture: %v", fixtureErr)
	}
	return fixturePath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if fixturePath != "" {
		os.RemoveAll(filepath.Dir(fixturePath))
	}
	os.Exit(code)
}

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func pass(t *testing.T, e *Evidence, svc registry.Service) *beacon.Protocol {
	t.Helper()
	p := &beacon.Pass{Host: "h1", Target: &registry.Target{Name: "h1", Services: []registry.Service{svc}},
		Beacon: &beacon.Beacon{Units: []beacon.UnitReport{{Service: svc.Name, Unit: svc.Unit, State: "active"}}}}
	e.Contribute(context.Background(), p)
	return p.Beacon.Units[0].Protocol
}

func declared(t *testing.T, state string) registry.Service {
	return registry.Service{Name: "worker", Unit: "worker.service", Program: "/usr/local/bin/worker",
		Env:      map[string]string{"FIXTURE_STATE": state},
		Protocol: &registry.ServiceProtocol{Exec: []string{fixture(t)}, PeriodSeconds: 10}}
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadyFalseThenTrueIsCarriedInTurn(t *testing.T) {
	state := t.TempDir()
	write(t, state, "running", "")
	write(t, state, "ready", "false")
	c := &clock{t: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
	e := &Evidence{Now: c.now}
	defer e.Close()
	svc := declared(t, state)

	if b := pass(t, e, svc); b == nil || b.State != beacon.ProtocolPending {
		t.Fatalf("first pass: %+v, want pending", b)
	}
	e.Idle()
	b := pass(t, e, svc)
	if b.State != beacon.ProtocolRead || b.Ready == nil || *b.Ready || b.Running == nil || !*b.Running {
		t.Fatalf("second pass: %+v, want read, running, not ready", b)
	}
	write(t, state, "ready", "true")
	// within the period nothing is read again
	c.add(5 * time.Second)
	pass(t, e, svc)
	e.Idle()
	if b := pass(t, e, svc); *b.Ready {
		t.Fatalf("read again inside the period: %+v", b)
	}
	c.add(6 * time.Second)
	pass(t, e, svc)
	e.Idle()
	if b := pass(t, e, svc); b.State != beacon.ProtocolRead || !*b.Ready {
		t.Fatalf("after the period: %+v, want ready", b)
	}
}

func TestUnreadableAnswerNamesTheOpAndTheCause(t *testing.T) {
	cases := []struct {
		name, answer, op, cause string
	}{
		{"malformed", "malformed", OpStatus, "not one JSON document"},
		{"nonzero exit", "fail", OpStatus, "exit 1: service-protocol: status: fixture told to fail"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			state := t.TempDir()
			write(t, state, "answer", tc.answer)
			e := &Evidence{}
			defer e.Close()
			svc := declared(t, state)
			pass(t, e, svc)
			e.Idle()
			b := pass(t, e, svc)
			if b.State != beacon.ProtocolUnreadable || b.Op != tc.op || !strings.Contains(b.Cause, tc.cause) {
				t.Fatalf("%+v, want unreadable op %s cause ~%q", b, tc.op, tc.cause)
			}
		})
	}
}

func TestStrictDecodingRefusesWhatIsNotOneStatusDocument(t *testing.T) {
	cases := []struct{ name, out, cause string }{
		{"empty", "", "printed nothing"},
		{"two documents", `{"running":true,"ready":true}{"running":true,"ready":true}`, "more than one"},
		{"no ready", `{"running":true}`, "no boolean ready"},
		{"string running", `{"running":"yes","ready":true}`, "not one JSON document"},
		{"array", `[true,true]`, "not one JSON document"},
		{"no running", `{"ready":false}`, "no boolean running"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := func(context.Context, []string, string, []string) ([]byte, error) { return []byte(tc.out), nil }
			_, err := ReadStatus(context.Background(), run, []string{"/x"}, OpReady, nil)
			var pe *Error
			if !errors.As(err, &pe) || pe.Op != OpReady || !strings.Contains(pe.Cause, tc.cause) {
				t.Fatalf("%v, want op ready cause ~%q", err, tc.cause)
			}
		})
	}
}

func TestAnOperationPastItsTimeoutIsUnreadable(t *testing.T) {
	testTimeout = 200 * time.Millisecond
	defer func() { testTimeout = 0 }()
	// sh -c 'sleep 5' status: the op lands in $0
	_, err := Run(context.Background(), []string{"/bin/sh", "-c", "sleep 5"}, OpStatus, nil)
	var pe *Error
	if !errors.As(err, &pe) || !strings.Contains(pe.Cause, "no answer within") {
		t.Fatalf("%v, want a timeout", err)
	}
}

func TestASlowExecutableNeverHoldsThePass(t *testing.T) {
	release := make(chan struct{})
	e := &Evidence{Run: func(ctx context.Context, _ []string, _ string, _ []string) ([]byte, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return []byte(`{"running":true,"ready":true}`), nil
	}}
	defer e.Close()
	svc := registry.Service{Name: "worker", Unit: "worker.service", Protocol: &registry.ServiceProtocol{Exec: []string{"/x"}}}
	done := make(chan struct{})
	go func() {
		pass(t, e, svc)
		pass(t, e, svc)
		close(done)
	}()
	<-done // two passes end while the reading is held
	close(release)
	e.Idle()
	if b := pass(t, e, svc); b.State != beacon.ProtocolRead {
		t.Fatalf("%+v, want read once released", b)
	}
}

func TestProbeReadsFingerprint(t *testing.T) {
	state := t.TempDir()
	e := &Evidence{}
	defer e.Close()
	svc := declared(t, state)
	svc.Protocol.Probe = true
	pass(t, e, svc)
	e.Idle()
	b := pass(t, e, svc)
	if b.State != beacon.ProtocolRead || b.Healthy == nil || !*b.Healthy || b.Ready != nil {
		t.Fatalf("%+v, want a fingerprint reading (healthy, no ready)", b)
	}
}
