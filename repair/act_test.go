package repair

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/channel/local"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/units"
	"github.com/wisent/stado/units/unitstest"
)

// the shipped crypto step names the variable when no interval is known
func TestTheCryptoStepNamesTheIntervalItNeeds(t *testing.T) {
	if _, err := ResolveStep(catalog.Shipped(), registry.OSLinux, "crypto", StepInputs(0)); !errors.As(err, new(*catalog.NeedError)) {
		t.Errorf("crypto without an interval: %v, want a *catalog.NeedError", err)
	}
}

func TestARestartOfAScopeWithoutManagerIsRefusedAsUnavailable(t *testing.T) {
	on := Reach{Name: "h1", Host: testHost(func() *catalog.Catalog { return nil }, nil, nil)}
	if r := on.Restart(context.Background(), "user", "x.service"); r.OK || r.Code != CodeNoManager || r.Answer != "refused" || r.Host != "h1" {
		t.Errorf("no manager: %+v", r)
	}
}

func TestAnUnreachableHostRefusesEveryStepAndTheRestartWithItsCode(t *testing.T) {
	on := Reach{Name: "ghost", Unreachable: refusal.New(refusal.UnknownHost, "the registry declares no target %q", "ghost")}
	out := on.Recover(context.Background(), Plan{Host: "ghost", Unit: "x.service", Steps: []string{"crypto"}})
	if out.Complete || len(out.Steps) != 1 || out.Steps[0].Code != CodeUnknownHost || out.Restart.Code != CodeUnknownHost || out.Restart.Scope != registry.ScopeSystem {
		t.Fatalf("outcome %+v", out)
	}
}

// userHost is this machine's end with one user manager, as HostProcess.Self
// gives it: users opens the manager of the unit's owner.
func userHost(goos string, users func(context.Context) (units.Manager, error)) *local.Host {
	return &local.Host{GOOS: goos, Manager: func(ctx context.Context, scope string) (units.Manager, func(), error) {
		if scope != registry.ScopeUser {
			return unitstest.NewMemory("/root"), func() {}, nil
		}
		m, err := users(ctx)
		return m, func() {}, err
	}}
}

func TestALocalUserUnitIsRestartedThroughItsUsersManager(t *testing.T) {
	alice := unitstest.NewMemory("/home/alice")
	alice.Load("web.service", "/home/alice/.config/systemd/user/web.service", unitstest.Runs)
	ctx := context.Background()
	if err := alice.Start(ctx, "web.service"); err != nil {
		t.Fatal(err)
	}
	before, _ := alice.Show(ctx, "web.service")
	on := Reach{Name: "h1", Host: userHost(registry.OSLinux, func(context.Context) (units.Manager, error) { return alice, nil })}
	r := on.Restart(ctx, registry.ScopeUser, "web.service")
	if !r.OK || r.Scope != registry.ScopeUser || r.PID == 0 || r.PID == before.PID || alice.Calls["Restart"] != 1 {
		t.Fatalf("restart %+v (calls %v), want done with a new pid", r, alice.Calls)
	}
}

func TestAUserUnitWhoseManagerIsNotRunningIsRefusedWithThatReasonNotUnavailable(t *testing.T) {
	down := &units.UserManagerDownError{User: "alice", UID: 1001, Manager: "systemd", Reason: "alice has no session and lingering is off"}
	on := Reach{Name: "h1", Host: userHost(registry.OSLinux, func(context.Context) (units.Manager, error) { return nil, down })}
	r := on.Restart(context.Background(), registry.ScopeUser, "web.service")
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
	on := Reach{Name: "mac1", Host: userHost(registry.OSDarwin, func(ctx context.Context) (units.Manager, error) { return users.Manager(ctx, "alice") })}
	r := on.Restart(context.Background(), registry.ScopeUser, "com.wisent.brama")
	if !r.OK || len(fake.calls) != 1 || strings.Join(fake.calls[0][1:], " ") != "kickstart -k gui/501/com.wisent.brama" {
		t.Fatalf("restart %+v, launchctl calls %v: want one kickstart -k in gui/501", r, fake.calls)
	}
}

// A peer restart of a user unit on a darwin host acts in the host's
// declared launchd domain; a system unit ignores it.
func TestARestartOfAUserUnitActsInTheHostsLaunchdDomain(t *testing.T) {
	mem := unitstest.NewMemory("/Users/op")
	mem.Load("com.x.agent", "/Users/op/Library/LaunchAgents/com.x.agent.plist", unitstest.Runs)
	var opened []string
	h := &local.Host{GOOS: registry.OSDarwin, Home: "/Users/op",
		Manager: func(context.Context, string) (units.Manager, func(), error) {
			opened = append(opened, "own")
			return mem, func() {}, nil
		},
		DomainManager: func(_ context.Context, _, domain string) (units.Manager, func(), error) {
			opened = append(opened, domain)
			return mem, func() {}, nil
		}}
	on := Reach{Name: "mac1", Host: h, LaunchdDomain: "gui/501"}
	if r := on.Restart(context.Background(), registry.ScopeUser, "com.x.agent"); !r.OK || len(opened) != 1 || opened[0] != "gui/501" {
		t.Errorf("user unit: %+v, opened %v", r, opened)
	}
	opened = nil
	mem.Load("com.x.daemon", "/Library/LaunchDaemons/com.x.daemon.plist", unitstest.Runs)
	if r := on.Restart(context.Background(), registry.ScopeSystem, "com.x.daemon"); !r.OK || len(opened) != 1 || opened[0] != "own" {
		t.Errorf("system unit: %+v, opened %v", r, opened)
	}
}
