package rollout

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/release"
)

// fleetOf is a registry of n targets h1..hn, each declaring brama (a
// service of product brama with a directory port) and running nothing else.
func fleetOf(n int) *registry.Document {
	d := &registry.Document{Version: 1}
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("h%d", i)
		d.Targets = append(d.Targets, registry.Target{Name: name, OS: "linux", SSH: registry.SSH{Address: "10.0.0." + fmt.Sprint(i)},
			Services: []registry.Service{{Name: "brama", Unit: "brama.service", Product: "brama", Program: release.CurrentLink("/r", "brama")}}})
		d.Directory = append(d.Directory, registry.DirectoryEntry{Service: "brama", Host: name, Port: 8300})
	}
	return d
}

// declare declares product at version everywhere (h2's override first when
// given).
func declare(versions map[string]string, overrides map[string]string) Declarations {
	var ps []string
	for p := range versions {
		ps = append(ps, p)
	}
	return Declarations{Products: ps, Release: func(target, product string) (string, bool, bool) {
		if v, ok := overrides[target+"/"+product]; ok {
			return v, true, true
		}
		v, ok := versions[product]
		return v, false, ok
	}}
}

// fakeHosts is an in-process fleet: each host answers ReleaseActivate from
// its active version, counting calls and the activations in flight.
type fakeHosts struct {
	mu       sync.Mutex
	active   map[string]string // host → active version of brama
	calls    map[string][]release.ActivateRequest
	fail     map[string]string // host → how its activation fails: "restore", "refuse", "unreachable"
	inFlight atomic.Int32
	maxSeen  atomic.Int32
	delay    time.Duration
}

func newFakeHosts(n int, version string) *fakeHosts {
	f := &fakeHosts{active: map[string]string{}, calls: map[string][]release.ActivateRequest{}, fail: map[string]string{}}
	for i := 1; i <= n; i++ {
		f.active[fmt.Sprintf("h%d", i)] = version
	}
	return f
}

func (f *fakeHosts) connector() channel.Connector {
	return func(t registry.Target) channel.Host { return &fakeHost{name: t.Name, f: f} }
}

func (f *fakeHosts) callCount(host string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls[host])
}

type fakeHost struct {
	channel.Host
	name string
	f    *fakeHosts
}

func (h *fakeHost) ReleaseActivate(_ context.Context, req release.ActivateRequest) (release.ActivateResult, error) {
	f := h.f
	n := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	for {
		m := f.maxSeen.Load()
		if n <= m || f.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	time.Sleep(f.delay)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[h.name] = append(f.calls[h.name], req)
	was := f.active[h.name]
	cur := &release.Image{Product: req.Product, Version: was, SHA256: "sha-" + was}
	switch {
	case was == req.Version:
		return release.ActivateResult{Product: req.Product, Outcome: release.OutcomeUnchanged, Active: cur}, nil
	case req.Mode == channel.ModePlan:
		return release.ActivateResult{Product: req.Product, Outcome: release.OutcomeWouldActivate, Active: cur}, nil
	}
	switch f.fail[h.name] {
	case "restore":
		return release.ActivateResult{Product: req.Product, Outcome: release.OutcomeRestored, Active: cur,
			Activation: &release.Activation{Product: req.Product, Version: req.Version, Outcome: release.OutcomeRestored,
				Refusal:  "brama.service: restart did not prove a fresh pid on the activated immutable image",
				Restored: &release.Proof{Version: was, PID: 77, Exe: "/r/images/sha-" + was + "/brama"}}}, nil
	case "refuse":
		return release.ActivateResult{}, refusal.New(refusal.ReleaseDowngrade, "%s is older than the active %s", req.Version, was)
	case "unreachable":
		return release.ActivateResult{}, errors.New("dial tcp: connection refused")
	}
	f.active[h.name] = req.Version
	return release.ActivateResult{Product: req.Product, Outcome: release.OutcomeActivated, Fetched: "store",
		Active: &release.Image{Product: req.Product, Version: req.Version, SHA256: "sha-" + req.Version}, Backup: cur,
		Activation: &release.Activation{Product: req.Product, Version: req.Version, SHA256: "sha-" + req.Version, Outcome: release.OutcomeActivated,
			Unit: req.Unit, PIDBefore: 10, PIDAfter: 11, Exe: "/r/images/sha-" + req.Version + "/brama", Serving: "pid 11 owns 10.0.0.1:8300"}}, nil
}

func outcomes(rep Report) map[string]string {
	out := map[string]string{}
	for _, l := range rep.Lines {
		out[l.Host] = l.Outcome
	}
	return out
}

// A canary that fails stops the rollout before any other host is called:
// they are all recorded not_attempted, and the error is the canary's
// refusal with its code.
func TestACanaryFailureStopsEverything(t *testing.T) {
	f := newFakeHosts(4, "1.0")
	f.fail["h1"] = "restore"
	var landed []Line
	rep, err := Converge(context.Background(), Options{Doc: fleetOf(4), Declared: declare(map[string]string{"brama": "2.0"}, nil),
		Connector: f.connector(), MaxConcurrent: 3, OnLine: func(l Line) { landed = append(landed, l) }})
	if !refusal.Is(err, refusal.ReleaseNotProven) || !strings.Contains(err.Error(), "h1") {
		t.Fatalf("err %v, want release_not_proven naming h1", err)
	}
	for _, h := range []string{"h2", "h3", "h4"} {
		if n := f.callCount(h); n != 0 {
			t.Errorf("%s was called %d times after the canary failed", h, n)
		}
	}
	want := map[string]string{"h1": release.OutcomeRestored, "h2": OutcomeNotAttempted, "h3": OutcomeNotAttempted, "h4": OutcomeNotAttempted}
	if got := outcomes(rep); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("outcomes %v, want %v", got, want)
	}
	c := rep.Lines[0]
	if !c.Canary || c.PID != 77 || c.From != "1.0" || c.To != "2.0" || c.Code != string(refusal.ReleaseNotProven) || !strings.Contains(c.Refusal, "fresh pid") {
		t.Errorf("canary line %+v", c)
	}
	if len(landed) != 4 || landed[0].Host != "h1" || rep.Failed != "h1/brama" {
		t.Errorf("landed %+v, failed %q", landed, rep.Failed)
	}
}

// A failure after the canary stops the hosts that have not begun: with one
// host at a time, the hosts after the failing one are never called.
func TestAFailureMidwayLeavesLaterHostsNotAttempted(t *testing.T) {
	f := newFakeHosts(5, "1.0")
	f.fail["h3"] = "refuse"
	rep, err := Converge(context.Background(), Options{Doc: fleetOf(5), Declared: declare(map[string]string{"brama": "2.0"}, nil),
		Connector: f.connector(), MaxConcurrent: 1})
	if !refusal.Is(err, refusal.ReleaseDowngrade) {
		t.Fatalf("err %v, want the host's own code", err)
	}
	want := map[string]string{"h1": release.OutcomeActivated, "h2": release.OutcomeActivated, "h3": OutcomeRefused, "h4": OutcomeNotAttempted, "h5": OutcomeNotAttempted}
	if got := outcomes(rep); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("outcomes %v, want %v", got, want)
	}
	if f.callCount("h4")+f.callCount("h5") != 0 {
		t.Fatal("a host after the failure was called")
	}
	if l := rep.Lines[0]; l.From != "1.0" || l.To != "2.0" || l.PID != 11 || !strings.Contains(l.Evidence, "sha-2.0") || l.Fetched != "store" {
		t.Errorf("activated line %+v", l)
	}
}

// An unreachable host is a failure without a refusal code: the error
// wraps the transport's.
func TestAnUnreachableHostStopsTheRolloutWithItsError(t *testing.T) {
	f := newFakeHosts(2, "1.0")
	f.fail["h1"] = "unreachable"
	rep, err := Converge(context.Background(), Options{Doc: fleetOf(2), Declared: declare(map[string]string{"brama": "2.0"}, nil), Connector: f.connector()})
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("err %v", err)
	}
	if _, coded := refusal.CodeOf(err); coded {
		t.Errorf("a transport failure reads as a refusal: %v", err)
	}
	if got := outcomes(rep); got["h1"] != OutcomeRefused || got["h2"] != OutcomeNotAttempted {
		t.Fatalf("outcomes %v", got)
	}
}

// After the canary, never more than MaxConcurrent hosts converge at once
// (the fake counts the calls in flight), and every host converges.
func TestConcurrencyNeverExceedsMaxConcurrent(t *testing.T) {
	f := newFakeHosts(12, "1.0")
	f.delay = 5 * time.Millisecond
	rep, err := Converge(context.Background(), Options{Doc: fleetOf(12), Declared: declare(map[string]string{"brama": "2.0"}, nil),
		Connector: f.connector(), MaxConcurrent: 3})
	if err != nil {
		t.Fatal(err)
	}
	if m := f.maxSeen.Load(); m > 3 || m < 2 {
		t.Fatalf("%d activations in flight at once, want at most 3 (and more than one)", m)
	}
	for h, o := range outcomes(rep) {
		if o != release.OutcomeActivated {
			t.Errorf("%s: %s", h, o)
		}
	}
	if rep.Canary != "h1" || len(rep.Lines) != 12 || rep.Lines[11].Host != "h12" {
		t.Errorf("canary %q, %d lines, last %+v", rep.Canary, len(rep.Lines), rep.Lines[len(rep.Lines)-1])
	}
}

// A host already on the declared image costs one call, which answers
// unchanged; the request names the unit, its directory port and address.
func TestAnUnchangedHostCostsOneCall(t *testing.T) {
	f := newFakeHosts(2, "2.0")
	rep, err := Converge(context.Background(), Options{Doc: fleetOf(2), Declared: declare(map[string]string{"brama": "2.0"}, nil), Connector: f.connector()})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"h1", "h2"} {
		if n := f.callCount(h); n != 1 {
			t.Errorf("%s: %d calls", h, n)
		}
	}
	if got := outcomes(rep); got["h1"] != release.OutcomeUnchanged || got["h2"] != release.OutcomeUnchanged {
		t.Fatalf("outcomes %v", got)
	}
	req := f.calls["h2"][0]
	if req.Unit != "brama.service" || req.Scope != "system" || req.Port != 8300 || req.Address != "10.0.0.2" || req.Wait != DefaultWait || req.Mode != channel.ModeApply {
		t.Errorf("request %+v", req)
	}
}

// Plan mode asks every host in plan mode and changes nothing; a refusal
// there stops nothing.
func TestPlanModeChangesNothing(t *testing.T) {
	f := newFakeHosts(3, "1.0")
	f.active["h2"] = "2.0"
	rep, err := Converge(context.Background(), Options{Doc: fleetOf(3), Declared: declare(map[string]string{"brama": "2.0"}, nil),
		Connector: f.connector(), Mode: channel.ModePlan})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"h1": release.OutcomeWouldActivate, "h2": release.OutcomeUnchanged, "h3": release.OutcomeWouldActivate}
	if got := outcomes(rep); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("outcomes %v", got)
	}
	for h, v := range map[string]string{"h1": "1.0", "h2": "2.0", "h3": "1.0"} {
		if f.active[h] != v {
			t.Errorf("%s changed to %s", h, f.active[h])
		}
		if f.calls[h][0].Mode != channel.ModePlan {
			t.Errorf("%s asked in mode %q", h, f.calls[h][0].Mode)
		}
	}
	if rep.Canary != "" {
		t.Errorf("plan has canary %q", rep.Canary)
	}
}

// The selection: named targets only, a target's own declaration (pinned)
// wins, a product without a service is install-only (no unit), and an
// unknown target or undeclared product is refused before any call.
func TestConvergeSelectsTargetsAndProducts(t *testing.T) {
	f := newFakeHosts(3, "1.0")
	decl := declare(map[string]string{"brama": "2.0", "stado": "0.9"}, map[string]string{"h2/brama": "1.5"})
	rep, err := Converge(context.Background(), Options{Doc: fleetOf(3), Declared: decl, Targets: []string{"h2"}, Product: "brama", Connector: f.connector()})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Lines) != 1 || f.callCount("h1") != 0 || f.calls["h2"][0].Version != "1.5" || !f.calls["h2"][0].Pinned {
		t.Fatalf("lines %+v, calls %+v", rep.Lines, f.calls)
	}
	if _, err := Converge(context.Background(), Options{Doc: fleetOf(3), Declared: decl, Targets: []string{"h3"}, Product: "stado", Connector: f.connector()}); err != nil {
		t.Fatal(err)
	}
	if req := f.calls["h3"][0]; req.Unit != "" || req.Port != 0 || req.Product != "stado" {
		t.Errorf("install-only request %+v", req)
	}
	for _, o := range []Options{{Targets: []string{"nosuch"}}, {Product: "nosuch"}} {
		o.Doc, o.Declared, o.Connector = fleetOf(3), decl, f.connector()
		if _, err := Converge(context.Background(), o); !refusal.Is(err, refusal.NotFound) {
			t.Errorf("%+v: err %v, want not_found", o.Targets, err)
		}
	}
}

// The registry's autonomy max_concurrent is the default and the ceiling.
func TestTheRegistrysCapBoundsConcurrency(t *testing.T) {
	for _, tc := range []struct{ asked, limit, want int }{
		{0, 0, 1}, // nothing asked, no cap: one at a time
		{4, 0, 4}, // asked, no cap
		{0, 3, 3}, // the registry's cap is the default
		{8, 3, 3}, // and the ceiling
		{2, 3, 2}, // asking for less is allowed
	} {
		d := fleetOf(1)
		d.Autonomy.MaxConcurrent = tc.limit
		if got := maxConcurrent(Options{Doc: d, MaxConcurrent: tc.asked}); got != tc.want {
			t.Errorf("asked %d under cap %d: %d, want %d", tc.asked, tc.limit, got, tc.want)
		}
	}
}

// A host with several products converges them one after the other; its
// first failure leaves its remaining products not attempted.
func TestAFailingProductLeavesTheHostsOtherProductsNotAttempted(t *testing.T) {
	f := newFakeHosts(1, "1.0")
	f.fail["h1"] = "refuse"
	rep, err := Converge(context.Background(), Options{Doc: fleetOf(1), Declared: declare(map[string]string{"brama": "2.0", "stado": "0.9"}, nil), Connector: f.connector()})
	if err == nil || len(rep.Lines) != 2 || rep.Lines[0].Product != "brama" || rep.Lines[1].Outcome != OutcomeNotAttempted || f.callCount("h1") != 1 {
		t.Fatalf("err %v, lines %+v", err, rep.Lines)
	}
}
