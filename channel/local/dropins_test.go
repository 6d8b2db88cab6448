package local_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/channel/local"
	"github.com/wisent/stado/declaration"
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
	want := []channel.SetAsideDropIn{{Path: dropPath, How: channel.SetAsideRenamed, To: dropPath + ".stado-merged", Keys: []string{"ExecStartPre"}}}
	if !reflect.DeepEqual(plan.SetAside, want) || plan.Run != channel.RunRestarted {
		t.Errorf("plan: set aside %+v, run %s; want %+v and a restart", plan.SetAside, plan.Run, want)
	}
	if _, err := os.Stat(dropPath); err != nil {
		t.Errorf("the plan moved the drop-in: %v", err)
	}

	res, err := ensureIn(h, s, channel.ModeApply)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.SetAside, want) || res.Run != channel.RunRestarted || !res.Confirmed {
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
// nothing written, when setting it aside would lose something (it also
// sets what the declaration lacks) or cannot work (systemd reads its
// directory before the unit's own). Drop-ins that repeat nothing are left
// alone.
func TestEnsureRefusesADropInItCannotSetAsideWithoutLoss(t *testing.T) {
	cases := []struct {
		name    string
		unitDir string
		edit    func(s *registry.Service)
		refused bool
	}{
		{"the declaration lacks the drop-in's limit", "", func(s *registry.Service) { delete(s.Limits, "nofile") }, true},
		{"the declaration holds another limit", "", func(s *registry.Service) { s.Limits["nofile"] = declaration.Limit{Soft: "1024", Hard: "1024"} }, true},
		{"a directory systemd reads before the unit's own", "etc/systemd/system.control", nil, true},
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

// A drop-in other units share (a template's) or a package's is not
// touched: ensure masks it for this unit alone with a link to /dev/null of
// the same name in the unit's own drop-in directory.
func TestEnsureMasksASharedOrPackagedDropInForThisUnitOnly(t *testing.T) {
	h, _, s, _, dropPath := dropInHost(t, "usr/lib/systemd/user")
	res, err := ensureIn(h, s, channel.ModeApply)
	if err != nil {
		t.Fatal(err)
	}
	mask := filepath.Join(h.Home, ".config/systemd/user/web.service.d/override.conf")
	if len(res.SetAside) != 1 || res.SetAside[0].How != channel.SetAsideMasked || res.SetAside[0].To != mask {
		t.Fatalf("set aside %+v, want the package's drop-in masked at %s", res.SetAside, mask)
	}
	if target, err := os.Readlink(mask); err != nil || target != os.DevNull {
		t.Errorf("mask %s: %q %v", mask, target, err)
	}
	if b, _ := os.ReadFile(dropPath); string(b) != dropInOverride {
		t.Errorf("the package's drop-in changed: %q", b)
	}
	if again, err := ensureIn(h, s, channel.ModeApply); err != nil || len(again.SetAside) != 0 || again.Run != channel.RunNone {
		t.Errorf("second ensure: %+v %v", again, err)
	}
}

// systemd reports no drop-ins for a unit it holds no file for, although a
// drop-in directory may wait for it: ensure looks again once it installed
// the file, sets aside what repeats, and when it must refuse, takes the new
// file away again.
func TestEnsureOfANewUnitLooksAtItsWaitingDropInsAfterTheInstall(t *testing.T) {
	for _, conflict := range []bool{false, true} {
		h, _, s, unitPath, dropPath := dropInHost(t, "")
		mem := unitstest.NewMemory(h.Home) // holds no unit yet
		h.Manager = func(context.Context, string) (units.Manager, func(), error) { return mem, func() {}, nil }
		if err := os.Remove(unitPath); err != nil {
			t.Fatal(err)
		}
		if conflict {
			delete(s.Limits, "nofile")
		}
		res, err := ensureIn(h, s, channel.ModeApply)
		if conflict {
			if code, _ := refusal.CodeOf(err); code != refusal.DropInConflict {
				t.Fatalf("got %v, want %s", err, refusal.DropInConflict)
			}
			if _, err := os.Stat(unitPath); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the refused ensure left its new file behind: %v", err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(res.SetAside) != 1 || res.SetAside[0].How != channel.SetAsideRenamed || res.Install != units.ActionInstalled || !res.Confirmed {
			t.Errorf("ensure of a new unit: %+v", res)
		}
		if _, err := os.Stat(dropPath); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the waiting drop-in is still read: %v", err)
		}
	}
}

// verify names a drop-in that repeats the declaration's commands, and the
// service is not clean until an ensure set it aside.
func TestVerifyNamesADropInThatRepeatsTheDeclaredCommands(t *testing.T) {
	h, _, s, unitPath, dropPath := dropInHost(t, "")
	rendered, err := units.Render(s, "linux", h.Home)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(unitPath, rendered, 0o644); err != nil { // as an earlier stado left it
		t.Fatal(err)
	}
	read := func() channel.UnitCheck {
		t.Helper()
		v, err := h.Verify(context.Background(), channel.VerifyRequest{OS: "linux", Services: []channel.VerifyService{{Service: s}}})
		if err != nil || len(v.Units) != 1 {
			t.Fatalf("verify: %v %+v", err, v)
		}
		return v.Units[0]
	}
	if c := read(); !reflect.DeepEqual(c.RepeatingDropIns, []string{dropPath}) || c.Drift {
		t.Errorf("before the ensure: repeating %v, drift %v; want the override named and no drift", c.RepeatingDropIns, c.Drift)
	}
	if _, err := ensureIn(h, s, channel.ModeApply); err != nil {
		t.Fatal(err)
	}
	if c := read(); len(c.RepeatingDropIns) != 0 {
		t.Errorf("after the ensure: repeating %v", c.RepeatingDropIns)
	}
}

// A drop-in verify cannot read leaves its list empty; the host's reading
// is still answered.
func TestVerifyAnswersWhenADropInCannotBeRead(t *testing.T) {
	h, _, s, _, dropPath := dropInHost(t, "")
	huge := filepath.Join(filepath.Dir(dropPath), "huge.conf")
	if err := os.WriteFile(huge, make([]byte, units.MaxFileBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := h.Verify(context.Background(), channel.VerifyRequest{OS: "linux", Services: []channel.VerifyService{{Service: s}}})
	if err != nil || len(v.Units) != 1 {
		t.Fatalf("verify: %v %+v", err, v)
	}
	if c := v.Units[0]; len(c.RepeatingDropIns) != 0 || c.Verdict.State != units.StateActive {
		t.Errorf("verify over an unreadable drop-in: %+v", c)
	}
	if _, err := ensureIn(h, s, channel.ModeApply); err == nil || !strings.Contains(err.Error(), "huge.conf") {
		t.Errorf("ensure over an unreadable drop-in: %v, want an error naming it", err)
	}
}
