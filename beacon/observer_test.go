package beacon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/units"
	"github.com/wisent/stado/units/unitstest"
)

// userManagers hands out one in-memory manager per user, or an error.
type userManagers struct {
	managers map[string]units.Manager
	errs     map[string]error
	asked    []string
	forgot   []string
}

func (u *userManagers) Manager(_ context.Context, user string) (units.Manager, error) {
	u.asked = append(u.asked, user)
	if err := u.errs[user]; err != nil {
		return nil, err
	}
	return u.managers[user], nil
}

func (u *userManagers) Forget(user string) { u.forgot = append(u.forgot, user) }

func started(t *testing.T, m *unitstest.Memory, unit string) units.Verdict {
	t.Helper()
	m.Load(unit, "/x/"+unit, unitstest.Runs)
	if err := m.Start(context.Background(), unit); err != nil {
		t.Fatal(err)
	}
	v, _ := m.Show(context.Background(), unit)
	return v
}

func userFleet(sshUser string) *registry.Document {
	return &registry.Document{Version: 1, Targets: []registry.Target{{
		Name: "host1", OS: registry.OSLinux, SSH: registry.SSH{Address: "127.0.1.1", User: sshUser},
		Services: []registry.Service{
			{Name: "db", Unit: "db.service", Program: "/usr/bin/db"},
			{Name: "web", Unit: "web.service", Program: "/usr/bin/web", Scope: registry.ScopeUser},
		},
	}}}
}

func TestUserScopeServicesAreReadFromTheManagerOfTheTargetsSSHUser(t *testing.T) {
	sys, alice := unitstest.NewMemory("/root"), unitstest.NewMemory("/home/alice")
	started(t, sys, "db.service")
	v := started(t, alice, "web.service")
	started(t, sys, "web.service") // a system unit of the same name is not alice's
	users := &userManagers{managers: map[string]units.Manager{"alice": alice}}
	o := &UnitsObserver{Manager: sys, Users: users}
	doc := userFleet("alice")

	reps, refs, err := o.ObserveServices(context.Background(), &doc.Targets[0], []string{"stray.service"})
	if err != nil || len(refs) != 0 {
		t.Fatalf("%v %+v", err, refs)
	}
	if len(reps) != 3 || reps[0].Unit != "db.service" || reps[0].State != StateActive ||
		reps[1].Unit != "web.service" || reps[1].State != StateActive || reps[1].PID != v.PID || reps[2].State != StateMissing {
		t.Fatalf("reports %+v, want db active, alice's web active with pid %d, stray missing", reps, v.PID)
	}
	if len(users.asked) != 1 || users.asked[0] != "alice" {
		t.Errorf("asked for the managers of %v", users.asked)
	}
}

func TestAUserWhoseManagerIsNotRunningReadsUnobservedWithItsReasonNeverMissing(t *testing.T) {
	sys := unitstest.NewMemory("/root")
	started(t, sys, "db.service")
	down := &units.UserManagerDownError{User: "alice", UID: 1001, Manager: "systemd", Reason: "alice has no session and lingering is off"}
	users := &userManagers{errs: map[string]error{"alice": down}}
	st := newStore(t)
	if _, err := registry.Push(context.Background(), st, userFleet("alice"), 0, "test"); err != nil {
		t.Fatal(err)
	}
	r := &Runner{Host: "host1", Store: st, Observer: &UnitsObserver{Manager: sys, Users: users}, Config: Config{Interval: time.Second}}
	b, err := r.RunPass(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Units) != 2 || b.Units[0].State != StateActive {
		t.Fatalf("units %+v", b.Units)
	}
	web := b.Units[1]
	if web.Service != "web" || web.State != StateUnobserved || !strings.Contains(web.Sentence, "lingering is off") {
		t.Fatalf("web %+v, want unobserved with the reason", web)
	}
	var found bool
	for _, ref := range b.Refusals {
		found = found || ref.Code == "user_manager_down" && ref.Subject == "user alice"
	}
	if !found {
		t.Errorf("refusals %+v, want user_manager_down for user alice", b.Refusals)
	}
	if len(users.forgot) != 0 {
		t.Errorf("forgot %v: a manager that never opened has nothing to forget", users.forgot)
	}
}

// failingOnce fails its first ShowMany, as a kept connection to a user
// manager that restarted since does.
type failingOnce struct {
	units.Manager
	failed bool
}

func (f *failingOnce) ShowMany(ctx context.Context, names []string) ([]units.Verdict, error) {
	if !f.failed {
		f.failed = true
		return nil, errors.New("connection closed")
	}
	return f.Manager.ShowMany(ctx, names)
}

func TestAKeptUserManagerThatFailsIsForgottenAndAskedAfresh(t *testing.T) {
	alice := unitstest.NewMemory("/home/alice")
	started(t, alice, "web.service")
	users := &userManagers{managers: map[string]units.Manager{"alice": &failingOnce{Manager: alice}}}
	o := &UnitsObserver{Manager: unitstest.NewMemory("/root"), Users: users}
	doc := userFleet("alice")
	reps, refs, err := o.ObserveServices(context.Background(), &doc.Targets[0], nil)
	if err != nil || len(refs) != 0 || reps[1].State != StateActive {
		t.Fatalf("%v %+v %+v", err, refs, reps)
	}
	if len(users.forgot) != 1 || len(users.asked) != 2 {
		t.Errorf("forgot %v, asked %v: want one forget and a second ask", users.forgot, users.asked)
	}
}

func TestUserUnitsOfATargetWithNoSSHUserBelongToRoot(t *testing.T) {
	root := unitstest.NewMemory("/root")
	started(t, root, "web.service")
	users := &userManagers{managers: map[string]units.Manager{"root": root}}
	o := &UnitsObserver{Manager: unitstest.NewMemory("/root"), Users: users}
	doc := userFleet("")
	reps, _, err := o.ObserveServices(context.Background(), &doc.Targets[0], nil)
	if err != nil || reps[1].State != StateActive || users.asked[0] != "root" {
		t.Fatalf("%v %+v asked %v", err, reps, users.asked)
	}
}

func TestTheReaderKeepsAnUnobservedUnitWithItsReason(t *testing.T) {
	st := newStore(t)
	if _, err := registry.Push(context.Background(), st, userFleet("alice"), 0, "test"); err != nil {
		t.Fatal(err)
	}
	users := &userManagers{errs: map[string]error{"alice": &units.UserManagerDownError{User: "alice", UID: 1001, Manager: "systemd", Reason: "alice has no session and lingering is off"}}}
	r := &Runner{Host: "host1", Store: st, Observer: &UnitsObserver{Manager: unitstest.NewMemory("/root"), Users: users}, Config: Config{Interval: time.Minute}}
	b, err := r.RunPass(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	v, err := LoadView(context.Background(), st, b.At, 0)
	if err != nil {
		t.Fatal(err)
	}
	var web *Row
	for _, row := range v.Rows("host1") {
		if row.Service == "web" {
			web = &row
		}
	}
	if web == nil || web.State != StateUnobserved || !strings.Contains(web.Detail(), "lingering is off") {
		t.Fatalf("row %+v, want unobserved with the reason", web)
	}
}

// launchctlOutputs answers `launchctl print TARGET` with the real outputs
// kept in units/testdata/launchctl (launchd cannot run here): a file per
// target, with its exit status.
type launchctlOutputs struct {
	t     *testing.T
	files map[string]string
	codes map[string]int
	calls [][]string
}

func (f *launchctlOutputs) Run(_ context.Context, argv []string) ([]byte, error) {
	f.calls = append(f.calls, argv)
	if len(argv) < 3 || argv[1] != "print" {
		return nil, nil
	}
	data, err := os.ReadFile(filepath.Join("..", "units", "testdata", "launchctl", f.files[argv[2]]))
	if err != nil {
		f.t.Fatal(err)
	}
	if code := f.codes[argv[2]]; code != 0 {
		return nil, &units.ExitError{Argv: argv, Code: code, Stderr: string(data)}
	}
	return data, nil
}

func TestLaunchAgentsAreReadInTheGUIDomainOfTheTargetsSSHUser(t *testing.T) {
	doc := &registry.Document{Version: 1, Targets: []registry.Target{{
		Name: "mac1", OS: registry.OSDarwin, SSH: registry.SSH{Address: "127.0.1.9", User: "alice"},
		Services: []registry.Service{{Name: "brama", Unit: "com.wisent.brama", Program: "/usr/local/bin/brama", Scope: registry.ScopeUser}},
	}}}
	lookup := func(name string) (units.Account, error) {
		return units.Account{Name: name, UID: 501, Home: "/Users/" + name}, nil
	}
	ctx := context.Background()

	running := &launchctlOutputs{t: t, files: map[string]string{"gui/501/com.wisent.brama": "running-system-wazuh.txt"}}
	o := &UnitsObserver{Manager: unitstest.NewMemory("/var/root"), Users: &units.UserManagers{GOOS: registry.OSDarwin, Runner: running, Lookup: lookup}}
	reps, refs, err := o.ObserveServices(ctx, &doc.Targets[0], nil)
	if err != nil || len(refs) != 0 || reps[0].State != StateActive || reps[0].PID == 0 {
		t.Fatalf("%v %+v %+v, want the agent active with its pid", err, refs, reps)
	}
	if got := running.calls[0]; got[1] != "print" || got[2] != "gui/501/com.wisent.brama" {
		t.Errorf("asked launchctl %v", got)
	}

	// alice is not logged in: launchd holds no gui/501 domain
	absent := &launchctlOutputs{t: t, files: map[string]string{"gui/501/com.wisent.brama": "gui-domain-absent-sequoia.txt"},
		codes: map[string]int{"gui/501/com.wisent.brama": 113}}
	o.Users = &units.UserManagers{GOOS: registry.OSDarwin, Runner: absent, Lookup: lookup}
	reps, refs, err = o.ObserveServices(ctx, &doc.Targets[0], nil)
	if err != nil || reps[0].State != StateUnobserved || !strings.Contains(reps[0].Sentence, "gui/501") ||
		len(refs) != 1 || refs[0].Code != "user_manager_down" || refs[0].Subject != "user alice" {
		t.Fatalf("%v %+v %+v, want unobserved naming gui/501 and user_manager_down for alice", err, refs, reps)
	}
}

// amongAsker is a manager that answers which of some units it holds and
// keeps the names it was asked of.
type amongAsker struct {
	*unitstest.Memory
	asked [][]string
}

func (a *amongAsker) ListLoadedAmong(ctx context.Context, names []string) ([]string, error) {
	a.asked = append(a.asked, append([]string(nil), names...))
	return units.LoadedAmong(ctx, a.Memory, names)
}

// The undeclared units are those loaded of the files an administrator
// installed, and the init system is asked of those files only: not of the
// declared units, masks or directories, and not at all when nothing but
// declared units is installed.
func TestLoadedAsksTheInitSystemOfTheInstalledUndeclaredUnitsOnly(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"app.service", "admin.service", "idle.service"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("[Service]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/dev/null", filepath.Join(dir, "masked.service")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "multi-user.target.wants"), 0o755); err != nil {
		t.Fatal(err)
	}
	m := &amongAsker{Memory: unitstest.NewMemory("/root")}
	for _, u := range []string{"app.service", "admin.service", "masked.service", "other.service"} {
		started(t, m.Memory, u)
	}
	o := &UnitsObserver{Manager: m, AdminDirs: []string{dir, filepath.Join(dir, "missing")}}
	ctx := context.Background()

	got, err := o.Loaded(ctx, map[string]bool{"app.service": true})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "admin.service" {
		t.Errorf("Loaded = %v, want [admin.service] (idle is not loaded, masked is a mask, other is not installed)", got)
	}
	if len(m.asked) != 1 || strings.Join(m.asked[0], " ") != "admin.service idle.service" {
		t.Errorf("the init system was asked of %v, want once of [admin.service idle.service]", m.asked)
	}

	got, err = o.Loaded(ctx, map[string]bool{"app.service": true, "admin.service": true, "idle.service": true})
	if err != nil || len(got) != 0 || len(m.asked) != 1 {
		t.Errorf("with every installed unit declared: Loaded = %v, %v after %d questions, want none and no new question", got, err, len(m.asked))
	}
}
