package local_test

import (
	"context"
	"testing"

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
