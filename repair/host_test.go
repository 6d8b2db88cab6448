package repair

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
	"github.com/wisent/stado/units"
	"github.com/wisent/stado/units/unitstest"
)

func TestHostProcessContributorsRefuseABadSiteCatalogOnly(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h := HostProcess{Store: st, Host: "h1", Home: t.TempDir()}
	cs, stop, err := h.Contributors(ctx)
	if err != nil || len(cs) != 2 {
		t.Fatalf("contributors: %d, %v", len(cs), err)
	}
	if _, ok := cs[0].(*Answerer); !ok {
		t.Errorf("first contributor %T, want the answerer", cs[0])
	}
	if _, ok := cs[1].(*Peer); !ok {
		t.Errorf("second contributor %T, want the peer", cs[1])
	}
	stop()
	if _, err := st.Put(ctx, store.CatalogKey, []byte("version: 1\nbogus: true\n"), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	var invalid *registry.ValidationError
	if _, _, err := h.Contributors(ctx); !errors.As(err, &invalid) {
		t.Fatalf("bad site catalog: %v, want its validation error", err)
	}
}

// users is a beacon.UserManagers of fixed managers, by user name.
type users map[string]units.Manager

func (u users) Manager(_ context.Context, user string) (units.Manager, error) {
	if m, ok := u[user]; ok {
		return m, nil
	}
	return nil, errors.New("no such user")
}
func (users) Forget(string) {}

// A host process's own end restarts a system unit through its system
// manager and a user unit in the manager of the user the registry says
// owns it (the target's ssh.user), and runs steps with its store.
func TestAHostProcessActsOnItsOwnUnitsThroughItsOwnEnd(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, _, err := registry.Update(ctx, st, "test", func(d *registry.Document) error {
		d.Targets = []registry.Target{{Name: "h1", OS: registry.OSLinux, SSH: registry.SSH{Address: "127.0.0.1", User: "alice"}}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	system, alice := unitstest.NewMemory("/root"), unitstest.NewMemory("/home/alice")
	system.Load("db.service", "/etc/systemd/system/db.service", unitstest.Runs)
	alice.Load("web.service", "/home/alice/.config/systemd/user/web.service", unitstest.Runs)
	h := HostProcess{Store: st, Host: "h1", Home: t.TempDir(), StoreURL: "file:///var/lib/stado/store",
		Manager: system, Users: users{"alice": alice}}
	cat, err := catalog.ValidateSite([]byte("version: 1\nsteps:\n  dump-env:\n    linux: {argv: [/usr/bin/env], timeout_seconds: 5}\n"), "test")
	if err != nil {
		t.Fatal(err)
	}
	on := Reach{Name: "h1", Host: h.Self(cat)}
	if r := on.Restart(ctx, registry.ScopeSystem, "db.service"); !r.OK || system.Calls["Restart"] != 1 {
		t.Errorf("system restart %+v (calls %v)", r, system.Calls)
	}
	if r := on.Restart(ctx, registry.ScopeUser, "web.service"); !r.OK || alice.Calls["Restart"] != 1 || system.Calls["Restart"] != 1 {
		t.Errorf("user restart %+v (alice %v, system %v): want alice's manager", r, alice.Calls, system.Calls)
	}
	if r := on.Step(ctx, "dump-env", nil); !r.OK || !strings.Contains(r.Output, "STADO_STORE=file:///var/lib/stado/store") || r.Host != "h1" {
		t.Errorf("step %+v: want it run with the host process's store", r)
	}
}
