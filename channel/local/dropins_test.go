package local_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/channel/local"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/units"
	"github.com/wisent/stado/units/unitstest"
)

const (
	dropInUnitFile = "[Unit]\nDescription=web\n\n[Service]\nExecStartPre=/usr/sbin/web -t\nExecStart=/usr/sbin/web\n\n[Install]\nWantedBy=default.target\n"
	// An override as `systemctl edit` leaves it.
	dropInOverride = "[Service]\nExecStartPre=/usr/local/bin/fetch-certs\nLimitNOFILE=65536\n"
)

// dropInHost is a host whose user unit web.service runs from unitFile with
// one drop-in, override.conf, holding dropin; s is the declaration adopt
// makes of the two.
func dropInHost(t *testing.T, unitDir string) (h *local.Host, mem *unitstest.Memory, s registry.Service, unitPath, dropPath string) {
	t.Helper()
	home := t.TempDir()
	if unitDir == "" {
		unitDir = filepath.Join(home, ".config/systemd/user")
	} else {
		unitDir = filepath.Join(home, unitDir)
	}
	unitPath = filepath.Join(unitDir, "web.service")
	dropPath = filepath.Join(unitPath+".d", "override.conf")
	if err := os.MkdirAll(filepath.Dir(dropPath), 0o755); err != nil {
		t.Fatal(err)
	}
	for p, c := range map[string]string{unitPath: dropInUnitFile, dropPath: dropInOverride} {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, err := units.ParseSystemdFiles([]byte(dropInUnitFile), "web.service", []units.DropIn{{Path: dropPath, Content: dropInOverride}})
	if err != nil || !p.Complete {
		t.Fatalf("adopt: %v %+v", err, p.Blockers)
	}
	s = p.Service
	mem = unitstest.NewMemory(home)
	mem.Load("web.service", unitPath, unitstest.Runs)
	if err := mem.Start(context.Background(), "web.service"); err != nil {
		t.Fatal(err)
	}
	h = &local.Host{GOOS: "linux", Home: home, Manager: func(context.Context, string) (units.Manager, func(), error) { return mem, func() {}, nil }}
	return h, mem, s, unitPath, dropPath
}

func ensureIn(h *local.Host, s registry.Service, mode string) (channel.EnsureResult, error) {
	return h.Ensure(context.Background(), channel.EnsureRequest{OS: "linux", Service: s, Mode: mode})
}

// Ensuring a declaration that adopt made from a unit and its override sets
// the override aside (renamed, its text kept) so systemd does not run its
// commands a second time over the unit's own file, restarts the unit to
// drop them, and a second ensure changes nothing.
func TestEnsureSetsAsideADropInTheDeclarationHolds(t *testing.T) {
	h, mem, s, _, dropPath := dropInHost(t, "")

	plan, err := ensureIn(h, s, channel.ModePlan)
	if err != nil {
		t.Fatal(err)
	}
	want := []channel.SetAsideDropIn{{Path: dropPath, To: dropPath + ".stado-merged", Keys: []string{"ExecStartPre"}}}
	if len(plan.SetAside) != 1 || plan.SetAside[0].To != want[0].To || plan.Run != channel.RunRestarted {
		t.Errorf("plan: set aside %+v, run %s; want %+v and a restart", plan.SetAside, plan.Run, want)
	}
	if _, err := os.Stat(dropPath); err != nil {
		t.Errorf("the plan moved the drop-in: %v", err)
	}

	res, err := ensureIn(h, s, channel.ModeApply)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.SetAside) != 1 || res.SetAside[0].To != want[0].To || res.Run != channel.RunRestarted || !res.Confirmed {
		t.Errorf("apply: %+v", res)
	}
	if _, err := os.Stat(dropPath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the drop-in is still read by systemd: %v", err)
	}
	if b, err := os.ReadFile(dropPath + ".stado-merged"); err != nil || string(b) != dropInOverride {
		t.Errorf("the set-aside drop-in lost its text: %v %q", err, b)
	}
	if mem.Calls["Reload"] != 1 {
		t.Errorf("%d reloads after setting a drop-in aside, want 1", mem.Calls["Reload"])
	}

	again, err := ensureIn(h, s, channel.ModeApply)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.SetAside) != 0 || again.Run != channel.RunNone || again.Install != units.ActionUnchanged {
		t.Errorf("second ensure: %+v", again)
	}
}

// A drop-in that repeats the declaration's commands is refused, with
// nothing written, when setting it aside would lose something: it also
// sets what the declaration lacks, or it lives in a package's directory.
// Drop-ins that repeat nothing are left alone.
func TestEnsureRefusesADropInItCannotSetAsideWithoutLoss(t *testing.T) {
	cases := []struct {
		name    string
		unitDir string
		edit    func(s *registry.Service)
		refused bool
	}{
		{"the declaration lacks the drop-in's limit", "", func(s *registry.Service) { delete(s.Limits, "nofile") }, true},
		{"the declaration holds another limit", "", func(s *registry.Service) { s.Limits["nofile"] = registry.Limit{Soft: "1024", Hard: "1024"} }, true},
		{"a package's drop-in", "usr/lib/systemd/user", nil, true},
		{"the declaration never ran the command", "", func(s *registry.Service) { s.ExecStartPre = s.ExecStartPre[:1] }, false},
		{"the declaration holds it", "", nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, _, s, _, dropPath := dropInHost(t, c.unitDir)
			if c.edit != nil {
				c.edit(&s)
			}
			installed := units.UnitPath(s, "linux", h.Home)
			before, _ := os.ReadFile(installed)
			_, err := ensureIn(h, s, channel.ModeApply)
			if !c.refused {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if code, _ := refusal.CodeOf(err); code != refusal.DropInConflict {
				t.Fatalf("got %v, want a %s refusal", err, refusal.DropInConflict)
			}
			if b, _ := os.ReadFile(dropPath); string(b) != dropInOverride {
				t.Errorf("the drop-in changed: %q", b)
			}
			if after, _ := os.ReadFile(installed); string(after) != string(before) {
				t.Errorf("the unit file %s was written before the refusal", installed)
			}
		})
	}
}
