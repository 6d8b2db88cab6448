package repair

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/units"
	"github.com/wisent/stado/units/unitstest"
)

func TestALocalUserUnitIsRestartedThroughItsUsersManager(t *testing.T) {
	alice := unitstest.NewMemory("/home/alice")
	alice.Load("web.service", "/home/alice/.config/systemd/user/web.service", unitstest.Runs)
	ctx := context.Background()
	if err := alice.Start(ctx, "web.service"); err != nil {
		t.Fatal(err)
	}
	before, _ := alice.Show(ctx, "web.service")
	l := &Local{Host: "h1", OS: registry.OSLinux, Managers: map[string]units.Manager{registry.ScopeSystem: unitstest.NewMemory("/root")},
		UserManager: func(context.Context) (units.Manager, error) { return alice, nil }}
	r := l.Restart(ctx, "h1", registry.ScopeUser, "web.service")
	if !r.OK || r.Scope != registry.ScopeUser || r.PID == 0 || r.PID == before.PID || alice.Calls["Restart"] != 1 {
		t.Fatalf("restart %+v (calls %v), want done with a new pid", r, alice.Calls)
	}
}

func TestAUserUnitWhoseManagerIsNotRunningIsRefusedWithThatReasonNotUnavailable(t *testing.T) {
	down := &units.UserManagerDownError{User: "alice", UID: 1001, Manager: "systemd", Reason: "alice has no session and lingering is off"}
	l := &Local{Host: "h1", OS: registry.OSLinux, Managers: map[string]units.Manager{},
		UserManager: func(context.Context) (units.Manager, error) { return nil, down }}
	r := l.Restart(context.Background(), "h1", registry.ScopeUser, "web.service")
	if r.OK || r.Code != "user_manager_down" || r.Answer != "refused" || !strings.Contains(r.Refusal, "lingering is off") {
		t.Fatalf("restart %+v, want user_manager_down with the reason", r)
	}
}

// printingLaunchctl answers print with a real running job kept in
// units/testdata/launchctl and records the other calls.
type printingLaunchctl struct {
	t     *testing.T
	calls [][]string
}

func (f *printingLaunchctl) Run(_ context.Context, argv []string) ([]byte, error) {
	if argv[1] == "print" {
		return os.ReadFile(filepath.Join("..", "units", "testdata", "launchctl", "running-system-wazuh.txt"))
	}
	f.calls = append(f.calls, argv)
	return nil, nil
}

func TestALocalLaunchAgentIsKickstartedInItsUsersGUIDomain(t *testing.T) {
	fake := &printingLaunchctl{t: t}
	users := &units.UserManagers{GOOS: registry.OSDarwin, Runner: fake,
		Lookup: func(name string) (units.Account, error) {
			return units.Account{Name: name, UID: 501, Home: "/Users/" + name}, nil
		}}
	l := &Local{Host: "mac1", OS: registry.OSDarwin, Managers: map[string]units.Manager{},
		UserManager: func(ctx context.Context) (units.Manager, error) { return users.Manager(ctx, "alice") }}
	r := l.Restart(context.Background(), "mac1", registry.ScopeUser, "com.wisent.brama")
	if !r.OK || len(fake.calls) != 1 || strings.Join(fake.calls[0][1:], " ") != "kickstart -k gui/501/com.wisent.brama" {
		t.Fatalf("restart %+v, launchctl calls %v: want one kickstart -k in gui/501", r, fake.calls)
	}
}
