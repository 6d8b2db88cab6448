package fleet_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/fleet"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/units"
)

// scriptedHost answers verify with one scripted check per read (the last
// one again once the script runs out); every other verb is not expected.
type scriptedHost struct {
	channel.Host
	mu     sync.Mutex
	script []channel.UnitCheck
	reads  int
	asked  channel.VerifyRequest
}

func (h *scriptedHost) OS() string { return "linux" }

func (h *scriptedHost) Verify(_ context.Context, req channel.VerifyRequest) (channel.VerifyResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.asked = req
	c := h.script[min(h.reads, len(h.script)-1)]
	h.reads++
	c.Service, c.Unit, c.Port, c.Address = req.Services[0].Service.Name, req.Services[0].Service.Unit, req.Services[0].Port, req.Services[0].Address
	return channel.VerifyResult{Units: []channel.UnitCheck{c}}, nil
}

const servingDoc = `version: 1
directory:
  - {service: api, host: host1, port: 8080}
targets:
  - name: host1
    os: linux
    ssh: {address: 127.0.1.1}
    services:
      - {name: api, unit: api.service, program: /usr/local/bin/api}
      - {name: worker, unit: worker.service, program: /usr/local/bin/worker}
`

func servingFleet(t *testing.T, h channel.Host) *fleet.Fleet {
	t.Helper()
	doc, err := registry.Parse([]byte(servingDoc), "fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return &fleet.Fleet{Doc: doc, Connect: func(registry.Target) channel.Host { return h }}
}

var (
	running  = units.Verdict{Unit: "api.service", State: units.StateActive, PID: 77, Starts: 1, Detail: "active (running)"}
	starting = units.Verdict{Unit: "api.service", State: units.StateActive, PID: 77, Starts: 1}
	ownPort  = []units.Listener{{Address: "127.0.1.1", PID: 77, Program: "api", Unit: "api.service"}}
)

func wait(t *testing.T, h *scriptedHost, o fleet.ServingOptions) (*fleet.ServingResult, error) {
	t.Helper()
	clock := &fakeClock{now: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
	o.Name, o.Host, o.Now, o.After = "api", "host1", clock.Now, clock.After
	return servingFleet(t, h).WaitServing(context.Background(), o)
}

func TestServingSucceedsOnceTheUnitOwnsItsDeclaredPort(t *testing.T) {
	h := &scriptedHost{script: []channel.UnitCheck{
		{Verdict: starting},
		{Verdict: running, Listeners: []units.Listener{{Address: "127.0.1.2"}}}, // another testbed host's socket
		{Verdict: running, Listeners: ownPort, UnitSockets: []channel.UnitSocket{{Address: "127.0.1.1", Port: 8080, PID: 77}}},
	}}
	r, err := wait(t, h, fleet.ServingOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Serving || r.PID != 77 || r.Listen != "127.0.1.1:8080" || r.Reads != 3 || r.Refusal != nil {
		t.Fatalf("%+v", r)
	}
	if vs := h.asked.Services; len(vs) != 1 || vs[0].Port != 8080 || vs[0].Address != "127.0.1.1" {
		t.Errorf("asked %+v: the port and the target's address, from the directory", vs)
	}
}

func TestServingRefusesAnExitedProcessWithItsExitCodeAndLastLine(t *testing.T) {
	failing := units.Verdict{Unit: "api.service", State: units.StateFailing, LastExit: 3, Starts: 2, Detail: "activating (auto-restart)"}
	h := &scriptedHost{script: []channel.UnitCheck{
		{Verdict: running},
		{Verdict: failing}, // the journal has not caught up yet
		{Verdict: failing, Logs: []string{"2026-12-02T12:00:01+0000 host1 sh[80]: starting", "2026-12-02T12:00:01+0000 host1 sh[80]: fatal: no /etc/api.conf"}},
	}}
	r, err := wait(t, h, fleet.ServingOptions{})
	if !refusal.Is(err, fleet.CodeNotServing) || r.ExitCode == nil || *r.ExitCode != 3 || r.StderrLine != "fatal: no /etc/api.conf" {
		t.Fatalf("%v %+v", err, r)
	}
	if !strings.Contains(err.Error(), "exited 3") || !strings.Contains(err.Error(), "fatal: no /etc/api.conf") {
		t.Errorf("message %q", err)
	}
	var re *refusal.Error
	if !errors.As(err, &re) || re.Details != r {
		t.Errorf("the refusal does not carry the result as its details")
	}
}

func TestServingRefusesAUnitSettledOnAnotherPortNamingIt(t *testing.T) {
	h := &scriptedHost{script: []channel.UnitCheck{
		{Verdict: running, UnitSockets: []channel.UnitSocket{{Address: "127.0.1.1", Port: 9090, PID: 77}}},
	}}
	r, err := wait(t, h, fleet.ServingOptions{Settle: time.Second, Poll: 250 * time.Millisecond})
	if !refusal.Is(err, fleet.CodeServingElsewhere) || !strings.Contains(err.Error(), "127.0.1.1:9090") || len(r.OtherPorts) != 1 {
		t.Fatalf("%v %+v", err, r)
	}
	if r.Reads < 5 {
		t.Errorf("refused after %d reads, before the settle time", r.Reads)
	}
}

func TestServingRefusesAtTheTimeoutWithWhatItSaw(t *testing.T) {
	h := &scriptedHost{script: []channel.UnitCheck{{Verdict: running}}}
	r, err := wait(t, h, fleet.ServingOptions{Timeout: 2 * time.Second})
	if !refusal.Is(err, fleet.CodeServingTimeout) || !strings.Contains(err.Error(), "listens on no port (pid 77 runs)") || r.Serving {
		t.Fatalf("%v %+v", err, r)
	}
	squatted := &scriptedHost{script: []channel.UnitCheck{{Verdict: running, Listeners: []units.Listener{{Address: "0.0.0.0", PID: 5, Program: "nc", Unit: "other.service"}}}}}
	_, err = wait(t, squatted, fleet.ServingOptions{Timeout: time.Second})
	if !refusal.Is(err, fleet.CodeServingTimeout) || !strings.Contains(err.Error(), "held by other.service (pid 5, nc)") {
		t.Errorf("a port another unit holds: %v", err)
	}
}

func TestServingRefusesBeforeAnyReadWithoutADirectoryPort(t *testing.T) {
	h := &scriptedHost{script: []channel.UnitCheck{{Verdict: running}}}
	f := servingFleet(t, h)
	_, err := f.WaitServing(context.Background(), fleet.ServingOptions{Name: "worker", Host: "host1"})
	if !refusal.Is(err, refusal.NotFound) || !strings.Contains(err.Error(), "no directory entry") || h.reads != 0 {
		t.Errorf("%v after %d reads", err, h.reads)
	}
	if _, err := f.WaitServing(context.Background(), fleet.ServingOptions{Name: "api"}); !refusal.Is(err, refusal.Usage) {
		t.Errorf("no host: %v", err)
	}
	if _, err := f.WaitServing(context.Background(), fleet.ServingOptions{Name: "api", Host: "host1", Timeout: time.Hour}); !refusal.Is(err, refusal.InvalidDuration) {
		t.Errorf("an hour's timeout: %v", err)
	}
	missing := &scriptedHost{script: []channel.UnitCheck{{Verdict: units.Verdict{Unit: "api.service", State: units.StateMissing}}}}
	if _, err := servingFleet(t, missing).WaitServing(context.Background(), fleet.ServingOptions{Name: "api", Host: "host1"}); !refusal.Is(err, fleet.CodeNotServing) || !strings.Contains(err.Error(), "not loaded") {
		t.Errorf("a unit not loaded: %v", err)
	}
}

func TestLastLogLineIsTheProgramsMessage(t *testing.T) {
	for in, want := range map[string]string{
		"2026-12-02T12:00:01+0000 host1 api[80]: listen tcp: address in use": "listen tcp: address in use",
		"plain line: with a colon": "plain line: with a colon",
		"-- No entries --":         "",
	} {
		if got := fleet.LastLogLine([]string{in}); got != want {
			t.Errorf("LastLogLine(%q) = %q, want %q", in, got, want)
		}
	}
}

// A declaration naming a service-protocol executable serves only once its
// ready operation says true: the wait goes on while it says false, and
// refuses at the timeout naming what the executable said.
func TestServingWaitsForReadyWhereAProtocolIsDeclared(t *testing.T) {
	no, yes := false, true
	owned := channel.UnitCheck{Verdict: running, Listeners: ownPort}
	notReady, ready, unreadable := owned, owned, owned
	notReady.Protocol = &channel.ProtocolReading{Running: &yes, Ready: &no}
	ready.Protocol = &channel.ProtocolReading{Running: &yes, Ready: &yes}
	unreadable.Protocol = &channel.ProtocolReading{Op: "ready", Cause: "not one JSON document"}

	h := &scriptedHost{script: []channel.UnitCheck{notReady, notReady, ready}}
	r, err := wait(t, h, fleet.ServingOptions{})
	if err != nil || !r.Serving || r.Reads != 3 || r.Protocol == nil || !*r.Protocol.Ready {
		t.Fatalf("ready on the third read: %+v, %v", r, err)
	}
	for _, tc := range []struct {
		check channel.UnitCheck
		want  string
	}{
		{notReady, "says it is not ready"},
		{unreadable, "could not be read (ready: not one JSON document)"},
	} {
		h := &scriptedHost{script: []channel.UnitCheck{tc.check}}
		r, err := wait(t, h, fleet.ServingOptions{Timeout: 2 * time.Second})
		var re *refusal.Error
		if !errors.As(err, &re) || re.Code != refusal.ServingTimeout || !strings.Contains(re.Message, tc.want) || r.Serving {
			t.Errorf("%+v: %v, want serving_timeout saying %q", tc.check.Protocol, err, tc.want)
		}
	}
}

// ensuringHost confirms every ensure and answers it with a scripted serving
// reading (nil: none); verify reads follow the embedded script.
type ensuringHost struct {
	scriptedHost
	inEnsure *channel.UnitCheck
	ensured  []channel.EnsureRequest
}

func (h *ensuringHost) Ensure(_ context.Context, req channel.EnsureRequest) (channel.EnsureResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ensured = append(h.ensured, req)
	res := channel.EnsureResult{Unit: req.Service.Unit, Install: units.ActionUnchanged, Run: channel.RunNone, Verdict: running, Confirmed: true}
	if req.Serving != nil && h.inEnsure != nil {
		c := *h.inEnsure
		c.Unit, c.Port, c.Address = req.Service.Unit, req.Serving.Port, req.Serving.Address
		res.Serving = &c
	}
	return res, nil
}

func ensureOn(t *testing.T, h *ensuringHost, name string, dry bool) fleet.EnsureOutcome {
	t.Helper()
	list, err := servingFleet(t, h).Ensure(context.Background(), fleet.EnsureOptions{Name: name, Hosts: []string{"host1"}, DryRun: dry, Settle: time.Second}, nil)
	if err != nil || len(list) != 1 {
		t.Fatalf("ensure %s: %d outcomes, %v", name, len(list), err)
	}
	return list[0]
}

// A service with a directory port has its first serving read taken by the
// host inside the ensure call: when it already serves, ensure makes no
// call of its own after the ensure.
func TestEnsureTakesTheFirstServingReadInTheSameCall(t *testing.T) {
	h := &ensuringHost{inEnsure: &channel.UnitCheck{Verdict: running, Listeners: ownPort, UnitSockets: []channel.UnitSocket{{Address: "127.0.1.1", Port: 8080, PID: 77}}}}
	h.script = []channel.UnitCheck{{Verdict: running}}
	r := ensureOn(t, h, "api", false)
	if r.Serving == nil || !r.Serving.Serving || r.Serving.Reads != 1 || r.Serving.Listen != "127.0.1.1:8080" {
		t.Fatalf("serving %+v, want served from the ensure's own reading", r.Serving)
	}
	if h.reads != 0 {
		t.Errorf("%d verify calls after the ensure, want none", h.reads)
	}
	if s := h.ensured[0].Serving; s == nil || s.Port != 8080 || s.Address != "127.0.1.1" {
		t.Errorf("the ensure asked for serving %+v, want the directory's port and address", s)
	}
}

// A first reading that does not serve yet is where the wait starts: the
// write half reads again until the port is the unit's.
func TestEnsureWaitsOnFromAFirstReadingThatDoesNotServeYet(t *testing.T) {
	h := &ensuringHost{inEnsure: &channel.UnitCheck{Verdict: starting}}
	h.script = []channel.UnitCheck{{Verdict: running, Listeners: ownPort, UnitSockets: []channel.UnitSocket{{Address: "127.0.1.1", Port: 8080, PID: 77}}}}
	r := ensureOn(t, h, "api", false)
	if r.Serving == nil || !r.Serving.Serving || r.Serving.Reads != 2 || h.reads != 1 {
		t.Fatalf("serving %+v after %d verify calls, want served on the second read", r.Serving, h.reads)
	}
}

// Only an applied ensure of a service with a directory port asks for the
// reading: not one without a port, not a dry run.
func TestEnsureAsksForAServingReadOnlyWhereThereIsAPortToRead(t *testing.T) {
	h := &ensuringHost{}
	h.script = []channel.UnitCheck{{Verdict: running}}
	ensureOn(t, h, "worker", false)
	ensureOn(t, h, "api", true)
	for _, req := range h.ensured {
		if req.Serving != nil {
			t.Errorf("ensure of %s (mode %s) asked for a serving read of %+v", req.Service.Unit, req.Mode, req.Serving)
		}
	}
}
