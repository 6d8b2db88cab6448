package beacon

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/wisent/stado/declaration"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/tests/testbed"
	"github.com/wisent/stado/units"
)

// seenRun is what the fixture recorded of how status ran (seen.json).
type seenRun struct {
	Cwd string            `json:"cwd"`
	UID int               `json:"uid"`
	Env map[string]string `json:"env"`
}

// openDir is a directory every account may enter and write (the fixture
// may run as nobody), removed when the test ends.
func openDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "stado-protocol-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// bundledFixture builds the protocol fixture as a module's executable at
// <root>/modules/fixmod/bin/service-protocol.
func bundledFixture(t *testing.T, root string) string {
	t.Helper()
	bin := filepath.Join(root, "modules", "fixmod", "bin", "service-protocol")
	if out, err := exec.Command("go", "build", "-o", bin, "../tests/fixtures/service-protocol").CombinedOutput(); err != nil {
		t.Fatalf("build the fixture: %v\n%s", err, out)
	}
	for d := filepath.Dir(bin); d != root; d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	return bin
}

func runSeen(t *testing.T, svc registry.Service, target *registry.Target) seenRun {
	t.Helper()
	e := &ProtocolEvidence{}
	defer e.Close()
	p := &Pass{Host: target.Name, Target: target, Beacon: &Beacon{Units: []UnitReport{{Service: svc.Name, Unit: svc.Unit, State: "active"}}}}
	e.Contribute(t.Context(), p)
	e.Idle()
	e.Contribute(t.Context(), p)
	if b := p.Beacon.Units[0].Protocol; b == nil || b.State != ProtocolRead {
		t.Fatalf("protocol reading %+v, want read", b)
	}
	data, err := os.ReadFile(filepath.Join(svc.Env["FIXTURE_STATE"], "seen.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s seenRun
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// A protocol operation gets what service protocol 1 defines: the module,
// its data directory and files (the declared settings file, the defaults
// for the others), the node's id and platform, OARBANK_SERVICE, the
// declaration's env, the fixed PATH and nothing inherited, with cwd at the
// bundle root found from the executable's .../modules/<module>/ path.
func TestProtocolOperationsGetTheProtocolsEnvironmentAndRunInTheBundleRoot(t *testing.T) {
	t.Setenv("STADO_LEAK_CHECK", "inherited")
	root, state := openDir(t), openDir(t)
	bin := bundledFixture(t, root)
	svc := registry.Service{Name: "colima", Unit: "colima.service", Program: "/usr/local/bin/colima",
		Env: map[string]string{"FIXTURE_STATE": state, "COLIMA_PROFILE": "ci"},
		Protocol: &declaration.ServiceProtocol{Exec: []string{bin}, ModuleData: "/srv/oarbank/data/fixmod",
			SettingsFile: "/etc/oarbank/fixmod-settings.json"}}
	got := runSeen(t, svc, &registry.Target{Name: "node-7", OS: "linux", Services: []registry.Service{svc}})
	want := map[string]string{
		"OARBANK_SERVICE":       "colima",
		"OARBANK_MODULE":        "fixmod",
		"OARBANK_MODULE_DATA":   "/srv/oarbank/data/fixmod",
		"OARBANK_NODE_ID":       "node-7",
		"OARBANK_PLATFORM":      "linux-" + runtime.GOARCH,
		"OARBANK_SETTINGS_FILE": "/etc/oarbank/fixmod-settings.json",
		"OARBANK_TOOLS_FILE":    "/srv/oarbank/data/fixmod/tools.json",
		"OARBANK_LIMITS_FILE":   "/srv/oarbank/data/fixmod/limits.json",
		"HOME":                  "/srv/oarbank/data/fixmod/home",
		"TMPDIR":                "/srv/oarbank/data/fixmod/tmp",
		"PATH":                  units.FixedPath("linux"),
		"COLIMA_PROFILE":        "ci",
	}
	for k, v := range want {
		if got.Env[k] != v {
			t.Errorf("%s = %q, want %q", k, got.Env[k], v)
		}
	}
	if _, leaked := got.Env["STADO_LEAK_CHECK"]; leaked {
		t.Error("the host process's environment leaked into the operation")
	}
	if wantCwd := filepath.Join(root, "modules", "fixmod"); got.Cwd != wantCwd {
		t.Errorf("cwd %q, want the bundle root %q", got.Cwd, wantCwd)
	}
	if got.UID != os.Geteuid() {
		t.Errorf("a system declaration ran as uid %d, want this process's %d", got.UID, os.Geteuid())
	}
}

// A user-scope declaration's operations run as the unit's user (the
// target's SSH user), not as the host process: here nobody (uid 65534).
func TestAUserScopeDeclarationsOperationsRunAsTheUnitsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		testbed.Unavailable(t, "running an operation as nobody needs root")
	}
	root, state := openDir(t), openDir(t)
	bin := bundledFixture(t, root)
	svc := registry.Service{Name: "colima", Unit: "colima.service", Program: "/usr/local/bin/colima", Scope: "user",
		Env:      map[string]string{"FIXTURE_STATE": state},
		Protocol: &declaration.ServiceProtocol{Exec: []string{bin}}}
	got := runSeen(t, svc, &registry.Target{Name: "node-7", OS: "linux", SSH: registry.SSH{User: "nobody"}, Services: []registry.Service{svc}})
	if got.UID != 65534 {
		t.Fatalf("ran as uid %d, want nobody (65534)", got.UID)
	}
	if wantCwd := filepath.Join(root, "modules", "fixmod"); got.Cwd != wantCwd {
		t.Errorf("cwd %q, want the bundle root %q", got.Cwd, wantCwd)
	}
}
