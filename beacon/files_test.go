package beacon

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/units"
)

// filesPass is a pass of host1 declaring four services whose unit files
// lie in dir: one as ensure writes it, one edited by hand, one removed and
// one incomplete declaration.
func filesPass(t *testing.T, dir string) *Pass {
	t.Helper()
	svc := func(name string) registry.Service {
		return registry.Service{Name: name, Unit: name + ".service", Program: "/bin/sleep", Args: []string{"infinity"},
			UnitPath: filepath.Join(dir, name+".service")}
	}
	target := &registry.Target{Name: "host1", OS: "linux", Services: []registry.Service{svc("same"), svc("edited"), svc("deleted"),
		{Name: "adopted", Unit: "adopted.service", UnitPath: filepath.Join(dir, "adopted.service")}}}
	for _, name := range []string{"same", "edited"} {
		s := target.Services[0]
		if name == "edited" {
			s = target.Services[1]
		}
		b, err := units.Render(s, "linux", "")
		if err != nil {
			t.Fatal(err)
		}
		if name == "edited" {
			b = []byte(strings.Replace(string(b), "ExecStart=", "# tuned by hand\nExecStart=", 1))
		}
		if err := os.WriteFile(s.UnitPath, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "adopted.service"), []byte("[Service]\nExecStart=/bin/true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &Pass{Host: "host1", Target: target, Beacon: &Beacon{}}
	for _, s := range target.Services {
		p.Beacon.Units = append(p.Beacon.Units, UnitReport{Service: s.Name, Unit: s.Unit, State: StateActive})
	}
	return p
}

func TestTheHostProcessSaysPerUnitWhetherItsFileIsWhatEnsureWouldWrite(t *testing.T) {
	p := filesPass(t, t.TempDir())
	(&UnitFiles{GOOS: "linux", CheckPath: anyPath}).Check(context.Background(), p)
	want := map[string]struct {
		drift, absent, uncompared bool
		reason                    string
	}{
		"same":    {},
		"edited":  {drift: true, reason: "differ from the rendering from line"},
		"deleted": {drift: true, absent: true, reason: "no unit file"},
		"adopted": {uncompared: true, reason: "incomplete"},
	}
	for _, u := range p.Beacon.Units {
		w := want[u.Service]
		f := u.File
		if f == nil || f.Drift != w.drift || f.Absent != w.absent || f.Uncompared != w.uncompared || !strings.Contains(f.Reason, w.reason) ||
			(w.reason == "" && f.Reason != "") || !strings.HasSuffix(f.Path, "/"+u.Unit) {
			t.Errorf("%s: %+v, want %+v", u.Service, f, w)
		}
	}
}

// A pass renders a declaration only when its registry revision (the
// document a pass is handed) is new; the installed bytes are read and
// compared every pass, so an edit between two passes is seen at once.
func TestUnitFilesRenderOncePerRegistryRevisionAndReadTheFileEveryPass(t *testing.T) {
	dir := t.TempDir()
	renders := 0
	f := &UnitFiles{GOOS: "linux", CheckPath: anyPath, render: func(s registry.Service, goos, home string) ([]byte, error) {
		renders++
		return units.Render(s, goos, home)
	}}
	doc := &registry.Document{}
	pass := func() map[string]*FileCheck {
		p := filesPass(t, dir)
		p.Document = doc
		f.Check(context.Background(), p)
		out := map[string]*FileCheck{}
		for _, u := range p.Beacon.Units {
			out[u.Service] = u.File
		}
		return out
	}
	first := pass()
	if renders != 3 || first["same"].Drift || !first["edited"].Drift {
		t.Fatalf("first pass: %d renders (want the 3 complete declarations), same %+v, edited %+v", renders, first["same"], first["edited"])
	}
	// filesPass writes the files again each time; edit one after it.
	p := filesPass(t, dir)
	p.Document = doc
	if err := os.WriteFile(filepath.Join(dir, "same.service"), []byte("[Service]\nExecStart=/bin/false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.Check(context.Background(), p)
	if renders != 3 || p.Unit("same").File == nil || !p.Unit("same").File.Drift {
		t.Errorf("second pass, same revision, file edited: %d renders (want no more), same %+v", renders, p.Unit("same").File)
	}
	doc = &registry.Document{}
	if again := pass(); renders != 6 || again["same"].Drift {
		t.Errorf("a new revision: %d renders, want 6; same %+v", renders, again["same"])
	}
}

// anyPath lets a test's unit files lie in its temporary directory.
func anyPath(registry.Service, string, string, string) error { return nil }

func TestAUnitPathOutsideTheUnitDirectoriesIsNeverRead(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "shadow")
	if err := os.WriteFile(secret, []byte("root:x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &Pass{Host: "host1", Target: &registry.Target{Name: "host1", SSH: registry.SSH{User: "ops"}, Services: []registry.Service{
		{Name: "odd", Unit: "shadow", Program: "/bin/true", UnitPath: secret},
		{Name: "mine", Unit: "mine.service", Scope: "user", Program: "/bin/true", UnitPath: "/home/other/.config/systemd/user/mine.service"}}},
		Beacon: &Beacon{Units: []UnitReport{{Service: "odd", Unit: "shadow"}, {Service: "mine", Unit: "mine.service"}}}}
	(&UnitFiles{GOOS: "linux", Home: func(string) (string, error) { return "/home/ops", nil }}).Check(context.Background(), p)
	for _, u := range p.Beacon.Units {
		if f := u.File; f == nil || f.Drift || !f.Uncompared || !strings.HasPrefix(f.Reason, "not read: ") {
			t.Errorf("%s: %+v", u.Service, f)
		}
	}
}

func TestAUserScopeUnitWhoseOwnersHomeIsUnknownIsUncomparedNotDrifted(t *testing.T) {
	p := &Pass{Host: "host1", Target: &registry.Target{Name: "host1", SSH: registry.SSH{User: "nobody-here"}, Services: []registry.Service{
		{Name: "mine", Unit: "mine.service", Scope: "user", Program: "/bin/true"}}}, Beacon: &Beacon{Units: []UnitReport{{Service: "mine", Unit: "mine.service"}}}}
	files := &UnitFiles{GOOS: "linux", Home: func(user string) (string, error) { return "", errors.New("no user " + user) }}
	files.Check(context.Background(), p)
	if f := p.Beacon.Units[0].File; f == nil || f.Drift || !f.Uncompared || !strings.Contains(f.Reason, "no user nobody-here") {
		t.Fatalf("%+v", f)
	}
}

func TestABeaconWithoutFileChecksStillDecodesAndOneWithThemKeepsThem(t *testing.T) {
	// an earlier host process's report has no file block: nothing is known of drift
	var old UnitReport
	if err := json.Unmarshal([]byte(`{"service":"web","unit":"web.service","state":"active"}`), &old); err != nil || old.File != nil {
		t.Fatalf("%+v, %v", old, err)
	}
	b, _ := json.Marshal(UnitReport{Service: "web", Unit: "web.service", State: StateActive, File: &FileCheck{Path: "/etc/systemd/system/web.service"}})
	if !strings.Contains(string(b), `"file":{"path":"/etc/systemd/system/web.service","drift":false}`) {
		t.Fatalf("a matching file must say drift false: %s", b)
	}
}

func TestReadRowsCarryTheBeaconsFileCheck(t *testing.T) {
	st := seeded(t)
	publish(t, st, Beacon{Host: "host1", Pass: 1, At: t0, IntervalSeconds: 5, StaleAfterSeconds: 15, Units: []UnitReport{
		{Service: "web", Unit: "web.service", State: StateActive, File: &FileCheck{Path: "/etc/systemd/system/web.service", Drift: true, Reason: "the installed bytes differ from the rendering from line 3"}},
	}})
	v, err := LoadView(context.Background(), st, t0, 0)
	if err != nil {
		t.Fatal(err)
	}
	rows := v.Rows("host1")
	if len(rows) != 2 || rows[0].File == nil || !rows[0].File.Drift || rows[1].File != nil {
		t.Fatalf("%+v", rows)
	}
}

func TestADriftedRowIsAProblemAndSaysItsDriftInDetailAndLines(t *testing.T) {
	r := Row{Host: "host1", Service: "web", Unit: "web.service", State: StateActive, File: &FileCheck{Path: "/etc/systemd/system/web.service", Drift: true, Reason: "no unit file", Absent: true}}
	if !r.Problem() || !strings.Contains(r.Detail(), "drift: no unit file") || !strings.Contains(strings.Join(r.Lines(), "\n"), "unit file /etc/systemd/system/web.service: drift: no unit file") {
		t.Fatalf("problem %v, detail %q, lines %q", r.Problem(), r.Detail(), r.Lines())
	}
	r.File = &FileCheck{Path: "/etc/systemd/system/web.service"}
	if r.Problem() || r.Detail() != "" {
		t.Fatalf("a matching file: problem %v, detail %q", r.Problem(), r.Detail())
	}
}
