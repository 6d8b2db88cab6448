package fleet_test

import (
	"context"
	"strings"
	"testing"

	"github.com/wisent/stado/fleet"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
)

// An undeclared stado addressed by its unit identity selects the stado
// product, required environment included, as its name does; only the
// recovery list's own name is refused as recovery_unit.
func TestEnsureOfStadosUnitIdentitySelectsTheStadoProduct(t *testing.T) {
	b := newBed(t)
	for _, name := range []string{"stado", "stado.service", "com.wisent.stado"} {
		_, err := b.ensure(t, fleet.EnsureOptions{Name: name})
		if !refusal.Is(err, refusal.Validation) {
			t.Errorf("ensure %s: %v, want the stado product's missing STADO_STORE (validation)", name, err)
		}
	}
	_, err := b.ensure(t, fleet.EnsureOptions{Name: "stado-host"})
	if !refusal.Is(err, refusal.RecoveryUnit) {
		t.Errorf("ensure stado-host: %v, want recovery_unit", err)
	}
	if b.mem.Calls["Install"] != 0 {
		t.Fatalf("a refused ensure installed: %v", b.mem.Calls)
	}
}

// declareStado adds host1's stado declaration to the fleet b reads.
func declareStado(b *bed) {
	tg := &b.fleet.Doc.Targets[0]
	tg.Services = append(tg.Services, registry.Service{Name: "stado", Unit: "stado.service", Scope: registry.ScopeUser,
		Program: "/usr/local/bin/stado", Args: []string{"host", "run"}, Env: map[string]string{"STADO_STORE": "file:///var/lib/stado"}, Product: "stado"})
}

// A declared stado is one service whichever of its product name and unit
// identities addresses it: ensure, restart and logs act on that one
// declaration.
func TestStadoIsAddressedByItsNameAndEveryUnitIdentity(t *testing.T) {
	b := newBed(t)
	declareStado(b)
	ctx := context.Background()
	for i, name := range []string{"stado", "stado.service", "com.wisent.stado"} {
		r, err := b.ensure(t, fleet.EnsureOptions{Name: name})
		if err != nil || r.Unit != "stado.service" || r.Recorded {
			t.Fatalf("ensure %s: %+v, %v; want the declared stado.service, nothing recorded", name, r, err)
		}
		if i > 0 && r.Install != "unchanged" {
			t.Fatalf("ensure %s: install %s, want the same unit unchanged", name, r.Install)
		}
		list, err := b.fleet.Restart(ctx, fleet.RestartOptions{Name: name, Hosts: []string{"host1"}}, nil)
		if err != nil || len(list) != 1 || list[0].Service != "stado" || list[0].Unit != "stado.service" {
			t.Fatalf("restart %s: %+v, %v", name, list, err)
		}
		logs, err := b.fleet.Logs(ctx, name, "host1", 10)
		if err != nil || logs.Service != "stado" || logs.Unit != "stado.service" {
			t.Fatalf("logs %s: %+v, %v", name, logs, err)
		}
	}
}

// The recovery-source unit is never retired nor removed, by any of its
// names, and the refusal comes before any host or registry write.
func TestRetireAndRemoveOfTheRecoveryUnitAreRefused(t *testing.T) {
	b := newBed(t)
	declareStado(b)
	ctx := context.Background()
	for _, name := range []string{"stado", "stado.service", "com.wisent.stado"} {
		if _, err := b.fleet.Retire(ctx, fleet.WithdrawOptions{Name: name, Host: "host1"}); !refusal.Is(err, refusal.RecoveryUnit) {
			t.Errorf("retire %s: %v, want recovery_unit", name, err)
		}
		if _, err := b.fleet.Remove(ctx, fleet.WithdrawOptions{Name: name, Host: "host1"}); !refusal.Is(err, refusal.RecoveryUnit) {
			t.Errorf("remove %s: %v, want recovery_unit", name, err)
		}
	}
	if b.mem.Calls["Remove"] != 0 || b.mem.Calls["Stop"] != 0 {
		t.Fatalf("the host was touched: %v", b.mem.Calls)
	}
	// an ordinary declaration is still retired
	if _, err := b.fleet.Remove(ctx, fleet.WithdrawOptions{Name: "api", Host: "host1"}); err != nil {
		t.Fatalf("remove api: %v", err)
	}
}

// Withdrawing a declaration also withdraws its directory entry on that
// host (the registry refuses an entry for a service its host does not
// declare), and leaves the entries of other hosts.
func TestRemoveWithdrawsTheServicesDirectoryEntryOnThatHost(t *testing.T) {
	b := newBed(t)
	ctx := context.Background()
	_, _, err := registry.Update(ctx, b.store, "directory", func(d *registry.Document) error {
		d.Directory = append(d.Directory,
			registry.DirectoryEntry{Service: "api", Host: "host1", Port: 8080},
			registry.DirectoryEntry{Service: "api", Host: "down", Port: 8080})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	f, err := fleet.Open(ctx, b.store, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.Remove(ctx, fleet.WithdrawOptions{Name: "api", Host: "host1"})
	if err != nil || len(res.Plan) != 1 || !strings.Contains(res.Plan[0], "directory entry") {
		t.Fatalf("remove: %+v, %v", res, err)
	}
	doc, _, _ := registry.Load(ctx, b.store)
	if len(doc.Directory) != 1 || doc.Directory[0].Host != "down" {
		t.Fatalf("directory after remove: %+v, want only down's entry", doc.Directory)
	}
}
