package units

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/wisent/stado/declaration"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
)

// refusingLaunchctl answers every print with launchctl's refusal kept in
// testdata (exit 113 for a missing domain, 125 for an unsupported one, as
// published) and records every argv.
type refusingLaunchctl struct {
	t     *testing.T
	file  string
	code  int
	calls [][]string
}

func (f *refusingLaunchctl) Run(_ context.Context, argv []string) ([]byte, error) {
	f.calls = append(f.calls, argv)
	data, err := os.ReadFile(filepath.Join("testdata", "launchctl", f.file))
	if err != nil {
		f.t.Fatal(err)
	}
	return nil, &ExitError{Argv: argv, Code: f.code, Stderr: string(data)}
}

func TestLaunchAgentsOfAUserWithNoGUISessionReadAsTheirManagerDown(t *testing.T) {
	for _, tc := range []struct {
		file string
		code int
	}{
		{"gui-domain-absent-sequoia.txt", 113},
		{"gui-domain-unsupported-headless.txt", 125},
	} {
		t.Run(tc.file, func(t *testing.T) {
			fake := &refusingLaunchctl{t: t, file: tc.file, code: tc.code}
			l := NewLaunchd(fake, GUIDomain(501), t.TempDir())
			l.User = "alice"
			ctx := context.Background()

			_, err := l.ShowMany(ctx, []string{"com.wisent.brama"})
			var down *UserManagerDownError
			if !errors.As(err, &down) || down.UID != 501 || down.User != "alice" || down.Manager != "launchd" {
				t.Fatalf("show: %v, want the gui/501 domain of alice down", err)
			}
			if c, _ := refusal.CodeOf(err); c != refusal.UserManagerDown {
				t.Errorf("code %q, want user_manager_down", c)
			}
			if !strings.Contains(err.Error(), "gui/501") || !strings.Contains(err.Error(), "logged in") {
				t.Errorf("message %q names neither the domain nor the login it needs", err)
			}
			// a restart of a label in a domain that is not there acts on nothing
			err = l.Restart(ctx, "com.wisent.brama")
			if !errors.As(err, &down) {
				t.Fatalf("restart: %v, want the domain down", err)
			}
			for _, c := range fake.calls {
				if c[1] != "print" {
					t.Errorf("ran %v against a domain that is not there", c)
				}
			}
		})
	}
}

func TestTheSystemDomainIsNeverReadAsAUserManagerDown(t *testing.T) {
	fake := &refusingLaunchctl{t: t, file: "gui-domain-absent-sequoia.txt", code: 113}
	l := NewLaunchd(fake, "system", t.TempDir())
	_, err := l.Show(context.Background(), "com.wisent.brama")
	var down *UserManagerDownError
	if err == nil || errors.As(err, &down) {
		t.Fatalf("system domain: %v, want a plain read error", err)
	}
}

func TestAUserWithNoRunningSystemdManagerIsRefusedWithTheReason(t *testing.T) {
	// a uid whose runtime directory does not exist here, and who does not
	// linger: no manager socket to reach
	a := Account{Name: "stado-nobody-here", UID: 2147000001, Home: "/nonexistent"}
	_, err := NewUserSystemd(context.Background(), a, nil)
	var down *UserManagerDownError
	if !errors.As(err, &down) || down.Manager != "systemd" || down.UID != a.UID {
		t.Fatalf("%v, want the systemd user manager down", err)
	}
	for _, want := range []string{"stado-nobody-here", "lingering is off", "loginctl enable-linger stado-nobody-here"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	if !refusal.Is(err, refusal.UserManagerDown) {
		t.Errorf("code of %v", err)
	}
}

func TestUserManagersRefuseAUserTheHostDoesNotKnow(t *testing.T) {
	u := &UserManagers{GOOS: declaration.OSLinux}
	defer u.Close()
	_, err := u.Manager(context.Background(), "stado-no-such-user-anywhere")
	if !refusal.Is(err, refusal.NotFound) || !strings.Contains(err.Error(), "no user stado-no-such-user-anywhere") {
		t.Fatalf("%v, want not_found naming the user", err)
	}
}

func TestUserManagersKeepOneLaunchdDomainPerUserUntilForgotten(t *testing.T) {
	u := &UserManagers{GOOS: declaration.OSDarwin, Runner: &refusingLaunchctl{t: t},
		Lookup: func(name string) (Account, error) { return Account{Name: name, UID: 502, Home: "/Users/" + name}, nil }}
	defer u.Close()
	ctx := context.Background()
	m1, err := u.Manager(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	l, ok := m1.(*Launchd)
	if !ok || l.Domain != "gui/502" || l.Home != "/Users/bob" || l.User != "bob" {
		t.Fatalf("manager %#v, want launchd gui/502 of bob", m1)
	}
	if m2, _ := u.Manager(ctx, "bob"); m2 != m1 {
		t.Error("a second call opened another manager")
	}
	u.Forget("bob")
	if m3, _ := u.Manager(ctx, "bob"); m3 == m1 {
		t.Error("Forget kept the manager")
	}
}

func TestScopeOwnerIsTheTargetsSSHUserAsEnsureInstallsThere(t *testing.T) {
	if got := ScopeOwner(registry.Target{SSH: registry.SSH{User: "alice"}}); got != "alice" {
		t.Errorf("owner %q", got)
	}
	if got := ScopeOwner(registry.Target{}); got != "root" {
		t.Errorf("owner of a target with no ssh user %q, want root (ssh's default)", got)
	}
}

func TestAnotherUsersUnitIsReadFromTheJournalByUIDAndUserUnit(t *testing.T) {
	got := UserJournalArgv(1001, "web.service", 5)
	want := []string{"journalctl", "_UID=1001", "_SYSTEMD_USER_UNIT=web.service", "-n", "5", "-o", "short-iso", "--no-pager"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%q, want %q", got, want)
	}
}
