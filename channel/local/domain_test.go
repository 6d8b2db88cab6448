package local_test

import (
	"context"
	"testing"
	"time"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/channel/local"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/units"
	"github.com/wisent/stado/units/unitstest"
)

// ensure (and verify) on darwin opens the user scope in the target's declared launchd
// domain; without one, the scope's own manager (gui/<uid>). A domain on a
// linux host, or outside the grammar, is refused before any manager opens.
func TestEnsureOpensTheDeclaredLaunchdDomainForUserScope(t *testing.T) {
	home := t.TempDir()
	mem := unitstest.NewMemory(home)
	var opened []string
	h := &local.Host{GOOS: "darwin", Home: home,
		Manager: func(_ context.Context, scope string) (units.Manager, func(), error) {
			opened = append(opened, "scope "+scope)
			return mem, func() {}, nil
		},
		DomainManager: func(_ context.Context, scope, domain string) (units.Manager, func(), error) {
			opened = append(opened, "domain "+domain)
			return mem, func() {}, nil
		}}
	s := registry.Service{Name: "brama", Unit: "com.wisent.brama", Program: "/usr/local/bin/brama", Scope: registry.ScopeUser}
	ctx := context.Background()
	for _, domain := range []string{"system", "gui/502", ""} {
		opened = nil
		if _, err := h.Ensure(ctx, channel.EnsureRequest{OS: "darwin", LaunchdDomain: domain, Service: s, Mode: channel.ModePlan}); err != nil {
			t.Fatalf("domain %q: %v", domain, err)
		}
		want := "domain " + domain
		if domain == "" {
			want = "scope user"
		}
		if len(opened) != 1 || opened[0] != want {
			t.Errorf("domain %q opened %v, want [%s]", domain, opened, want)
		}
	}
	// verify reads the units where ensure put them
	opened = nil
	if _, err := h.Verify(ctx, channel.VerifyRequest{OS: "darwin", LaunchdDomain: "gui/502", Services: []channel.VerifyService{{Service: s}}}); err != nil || len(opened) != 1 || opened[0] != "domain gui/502" {
		t.Errorf("verify in gui/502: opened %v, %v", opened, err)
	}
	opened = nil
	if _, err := h.Ensure(ctx, channel.EnsureRequest{OS: "darwin", LaunchdDomain: "gui/me", Service: s, Mode: channel.ModePlan}); !refusal.Is(err, refusal.InvalidScope) {
		t.Errorf("gui/me: %v, want invalid_scope", err)
	}
	lin := &local.Host{GOOS: "linux", Home: home, DomainManager: h.DomainManager, Manager: h.Manager}
	ls := registry.Service{Name: "api", Unit: "api.service", Program: "/usr/bin/api", Scope: registry.ScopeUser}
	if _, err := lin.Ensure(ctx, channel.EnsureRequest{OS: "linux", LaunchdDomain: "system", Service: ls, Mode: channel.ModePlan}); !refusal.Is(err, refusal.InvalidScope) {
		t.Errorf("linux with a domain: %v, want invalid_scope", err)
	}
	if len(opened) != 0 {
		t.Errorf("a refused request opened %v", opened)
	}
}

// restart, stop and remove of a user unit act in the domain the request
// names (the target's launchd_domain), as ensure installed it there; no
// domain keeps the scope's own manager. A domain on a linux host, or
// outside the grammar, is refused before any manager opens.
func TestUnitVerbsThatActOpenTheDeclaredLaunchdDomain(t *testing.T) {
	home := t.TempDir()
	mem := unitstest.NewMemory(home)
	var opened []string
	h := &local.Host{GOOS: "darwin", Home: home,
		Manager: func(_ context.Context, scope string) (units.Manager, func(), error) {
			opened = append(opened, "scope "+scope)
			return mem, func() {}, nil
		},
		DomainManager: func(_ context.Context, scope, domain string) (units.Manager, func(), error) {
			opened = append(opened, "domain "+domain)
			return mem, func() {}, nil
		}}
	ctx := context.Background()
	label := "com.wisent.brama"
	mem.Load(label, home+"/Library/LaunchAgents/"+label+".plist", unitstest.Runs)
	acts := map[string]func(channel.UnitRef) error{
		"restart": func(u channel.UnitRef) error { _, err := h.UnitRestart(ctx, u); return err },
		"stop":    func(u channel.UnitRef) error { _, err := h.UnitStop(ctx, u); return err },
		"remove": func(u channel.UnitRef) error {
			_, err := h.UnitRemove(ctx, channel.RemoveRequest{UnitRef: u})
			return err
		},
	}
	for _, verb := range []string{"restart", "stop", "remove"} {
		for _, domain := range []string{"gui/501", ""} {
			opened = nil
			if err := acts[verb](channel.UnitRef{Scope: registry.ScopeUser, Unit: label, Domain: domain}); err != nil {
				t.Fatalf("%s in %q: %v", verb, domain, err)
			}
			want := "domain " + domain
			if domain == "" {
				want = "scope user"
			}
			if len(opened) != 1 || opened[0] != want {
				t.Errorf("%s in %q opened %v, want [%s]", verb, domain, opened, want)
			}
		}
		opened = nil
		if err := acts[verb](channel.UnitRef{Scope: registry.ScopeUser, Unit: label, Domain: "gui/me"}); !refusal.Is(err, refusal.InvalidScope) || len(opened) != 0 {
			t.Errorf("%s in gui/me: %v, opened %v; want invalid_scope and nothing opened", verb, err, opened)
		}
	}
	lin := &local.Host{GOOS: "linux", Home: home, Manager: h.Manager, DomainManager: h.DomainManager}
	opened = nil
	if _, err := lin.UnitRestart(ctx, channel.UnitRef{Scope: registry.ScopeUser, Unit: "api.service", Domain: "gui/501"}); !refusal.Is(err, refusal.InvalidScope) || len(opened) != 0 {
		t.Errorf("linux with a domain: %v, opened %v", err, opened)
	}
}

// portRunner answers lsof and ps as a Mac would, for the port reader.
type portRunner map[string]string

func (r portRunner) Run(_ context.Context, argv []string) ([]byte, error) {
	out, ok := r[argv[0]]
	if !ok {
		return nil, &units.ExitError{Argv: argv, Code: 1}
	}
	return []byte(out), nil
}

// ensure's serving read on darwin reads the port through the host's port
// reader with the job's pid from the declared domain's manager: the
// socket of the job's child is the job's.
func TestEnsuresServingReadOnDarwinAttributesTheJobsChildsSocket(t *testing.T) {
	home := t.TempDir()
	mem := unitstest.NewMemory(home) // the job's first start runs as pid 1001
	opened := ""
	h := &local.Host{GOOS: "darwin", Home: home,
		Ports: units.LsofPorts{Runner: portRunner{
			units.LsofPath: "p1002\ncagent\nf9\ntIPv4\nn127.0.0.1:9090\nTST=LISTEN\np77\ncother\nf4\ntIPv4\nn127.0.0.1:9091\nTST=LISTEN\n",
			units.PsPath:   "    1     0\n 1001     1\n 1002  1001\n   77     1\n",
		}},
		Manager: func(context.Context, string) (units.Manager, func(), error) {
			return nil, nil, refusal.New(refusal.NoManager, "not this one")
		},
		DomainManager: func(_ context.Context, _, domain string) (units.Manager, func(), error) {
			opened = domain
			return mem, func() {}, nil
		}}
	req := channel.EnsureRequest{OS: "darwin", LaunchdDomain: "gui/501", Mode: channel.ModeApply, Settle: time.Millisecond,
		Serving: &channel.ServingPort{Port: 9090, Address: "127.0.0.1"}}
	req.Service = registry.Service{Name: "agent", Unit: "com.example.agent", Program: "/Users/me/bin/agent", Scope: registry.ScopeUser}
	res, err := h.Ensure(context.Background(), req)
	if err != nil || !res.Confirmed || opened != "gui/501" {
		t.Fatalf("ensure %+v, %v (opened %q)", res, err, opened)
	}
	c := res.Serving
	if c == nil || c.Verdict.PID != 1001 || len(c.Listeners) != 1 || c.Listeners[0].Unit != "com.example.agent" || c.Listeners[0].PID != 1002 {
		t.Fatalf("serving reading %+v, want the child 1002's socket as the job's", c)
	}
	if state, _ := units.PortOwnership(c.Unit, c.Address, c.Listeners); state != units.PortOwned {
		t.Errorf("port state %s, want owned", state)
	}
	if len(c.UnitSockets) != 1 || c.UnitSockets[0].Port != 9090 {
		t.Errorf("the job's sockets %+v, want 9090 alone", c.UnitSockets)
	}
}
