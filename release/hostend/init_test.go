package hostend_test

import (
	"context"
	"testing"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/release/hostend"
	"github.com/wisent/stado/units"
	"github.com/wisent/stado/units/unitstest"
)

func TestManagerInitRestartsAndReadsThroughTheScopesManager(t *testing.T) {
	m := unitstest.NewMemory(t.TempDir())
	m.Load("brama.service", "/etc/systemd/system/brama.service", unitstest.Runs)
	var opened []string
	in := hostend.ManagerInit{Open: func(ctx context.Context, scope string) (units.Manager, func(), error) {
		opened = append(opened, scope)
		return m, func() {}, nil
	}}
	ctx := context.Background()
	if err := in.Restart(ctx, "system", "brama.service"); err != nil {
		t.Fatal(err)
	}
	v, err := in.Show(ctx, "system", "brama.service")
	if err != nil || v.State != units.StateActive || v.PID == 0 {
		t.Fatalf("verdict %+v %v, want active with a pid", v, err)
	}
	if m.Calls["Restart"] != 1 || len(opened) != 2 || opened[0] != "system" {
		t.Fatalf("restarts %d, scopes opened %v", m.Calls["Restart"], opened)
	}
	none := hostend.ManagerInit{}
	_, err = none.Show(ctx, "system", "brama.service")
	if c, _ := refusal.CodeOf(err); c != refusal.NoManager {
		t.Fatalf("%v, want no_manager", err)
	}
}
