package units

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/wisent/stado/declaration"
)

// fakeLaunchctl stands in for launchctl, which cannot run on Linux: it
// answers print with the real outputs kept in testdata and records every
// argv it is sent. This is the one fake the project allows.
type fakeLaunchctl struct {
	t      *testing.T
	prints map[string]string // target -> testdata file; absent means not loaded
	calls  [][]string
}

func (f *fakeLaunchctl) Run(_ context.Context, argv []string) ([]byte, error) {
	f.calls = append(f.calls, argv)
	if len(argv) >= 3 && argv[1] == "print" {
		file, ok := f.prints[argv[2]]
		if !ok {
			file = "missing-system-openclaw.txt"
		}
		data, err := os.ReadFile(filepath.Join("testdata", "launchctl", file))
		if err != nil {
			f.t.Fatal(err)
		}
		if !ok {
			return nil, &ExitError{Argv: argv, Code: 113, Stderr: string(data)}
		}
		return data, nil
	}
	return nil, nil
}

// acts returns the calls other than print.
func (f *fakeLaunchctl) acts() [][]string {
	var out [][]string
	for _, c := range f.calls {
		if c[1] != "print" {
			out = append(out, c)
		}
	}
	return out
}

func agentDeclaration() declaration.Service {
	return declaration.Service{Name: "brama", Unit: "com.wisent.brama", Program: "/usr/local/bin/brama", Args: []string{"serve"}, Scope: declaration.ScopeUser}
}

func TestLaunchdInstallOfEqualBytesTouchesNothing(t *testing.T) {
	home := t.TempDir()
	fake := &fakeLaunchctl{t: t, prints: map[string]string{"gui/501/com.wisent.brama": "running-system-wazuh.txt"}}
	l := NewLaunchd(fake, "gui/501", home)
	s := agentDeclaration()
	content, err := RenderLaunchd(s, home)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	res, err := l.Install(ctx, s, content)
	if err != nil || res.Action != ActionInstalled {
		t.Fatalf("first install: %+v %v", res, err)
	}
	wantPath := filepath.Join(home, "Library", "LaunchAgents", "com.wisent.brama.plist")
	if res.Path != wantPath {
		t.Fatalf("path %s, want %s", res.Path, wantPath)
	}
	if got, _ := os.ReadFile(wantPath); string(got) != string(content) {
		t.Fatal("plist on disk differs from the rendering")
	}
	if _, err := os.Stat(filepath.Join(home, ".stado", "logs")); err != nil {
		t.Fatalf("log directory not created: %v", err)
	}
	// The job was loaded with an older definition: it is booted out.
	if want := [][]string{{"/bin/launchctl", "bootout", "gui/501/com.wisent.brama"}}; !reflect.DeepEqual(fake.acts(), want) {
		t.Fatalf("acts %v, want %v", fake.acts(), want)
	}

	fake.calls = nil
	res, err = l.Install(ctx, s, content)
	if err != nil || res.Action != ActionUnchanged {
		t.Fatalf("second install: %+v %v", res, err)
	}
	if len(fake.calls) != 0 {
		t.Fatalf("unchanged install ran %v", fake.calls)
	}

	s.Args = []string{"serve", "--verbose"}
	content2, _ := RenderLaunchd(s, home)
	res, err = l.Install(ctx, s, content2)
	if err != nil || res.Action != ActionUpdated {
		t.Fatalf("changed install: %+v %v", res, err)
	}
}

func TestLaunchdSendsBootstrapKickstartAndBootout(t *testing.T) {
	home := "/Users/operator"
	cases := []struct {
		name   string
		loaded string // testdata file print answers with; "" = not loaded
		do     func(l *Launchd) error
		want   [][]string
	}{
		// Starting a job launchd does not hold bootstraps its plist.
		{"start not loaded", "", func(l *Launchd) error { return l.Start(context.Background(), "com.wisent.brama") },
			[][]string{{"/bin/launchctl", "bootstrap", "gui/501", home + "/Library/LaunchAgents/com.wisent.brama.plist"}}},
		// Starting a loaded job without a process kickstarts it.
		{"start loaded, failing", "spawn-scheduled-exit5-toss.txt", func(l *Launchd) error { return l.Start(context.Background(), "com.wisent.brama") },
			[][]string{{"/bin/launchctl", "kickstart", "gui/501/com.wisent.brama"}}},
		// Starting a running job does nothing.
		{"start running", "running-system-wazuh.txt", func(l *Launchd) error { return l.Start(context.Background(), "com.wisent.brama") }, nil},
		// Restarting a loaded job kills and restarts it.
		{"restart loaded", "running-system-wazuh.txt", func(l *Launchd) error { return l.Restart(context.Background(), "com.wisent.brama") },
			[][]string{{"/bin/launchctl", "kickstart", "-k", "gui/501/com.wisent.brama"}}},
		// Restarting a job launchd does not hold bootstraps it.
		{"restart not loaded", "", func(l *Launchd) error { return l.Restart(context.Background(), "com.wisent.brama") },
			[][]string{{"/bin/launchctl", "bootstrap", "gui/501", home + "/Library/LaunchAgents/com.wisent.brama.plist"}}},
		// Stopping boots the job out.
		{"stop loaded", "running-system-wazuh.txt", func(l *Launchd) error { return l.Stop(context.Background(), "com.wisent.brama") },
			[][]string{{"/bin/launchctl", "bootout", "gui/501/com.wisent.brama"}}},
		// Stopping a job launchd does not hold is a no-op.
		{"stop not loaded", "", func(l *Launchd) error { return l.Stop(context.Background(), "com.wisent.brama") }, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fake := &fakeLaunchctl{t: t, prints: map[string]string{}}
			if c.loaded != "" {
				fake.prints["gui/501/com.wisent.brama"] = c.loaded
			}
			if err := c.do(NewLaunchd(fake, "gui/501", home)); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(fake.acts(), c.want) {
				t.Errorf("acts %v, want %v", fake.acts(), c.want)
			}
			for _, call := range fake.calls {
				if call[1] == "load" || call[1] == "unload" {
					t.Errorf("deprecated launchctl %s sent", call[1])
				}
			}
		})
	}
}

func TestLaunchdShowReadsVerdicts(t *testing.T) {
	fake := &fakeLaunchctl{t: t, prints: map[string]string{
		"system/com.wisent.brama":    "spawn-scheduled-exit5-toss.txt",
		"system/com.wisent.skarbiec": "running-system-wazuh.txt",
	}}
	l := NewLaunchd(fake, "system", "/var/root")
	vs, err := l.ShowMany(context.Background(), []string{"com.wisent.brama", "com.wisent.skarbiec", "com.wisent.gone"})
	if err != nil {
		t.Fatal(err)
	}
	got := []string{vs[0].State, vs[1].State, vs[2].State}
	if want := []string{StateFailing, StateActive, StateMissing}; !reflect.DeepEqual(got, want) {
		t.Fatalf("states %v, want %v", got, want)
	}
	if vs[1].PID != 1486 || !strings.HasPrefix(vs[0].Sentence, "com.wisent.brama runs no process: its last run exited 5") {
		t.Errorf("verdicts %+v", vs)
	}
	if want := []string{"/bin/launchctl", "print", "system/com.wisent.gone"}; !reflect.DeepEqual(fake.calls[2], want) {
		t.Errorf("argv %v", fake.calls[2])
	}
}

func TestLaunchdLogsReadTheDeclaredFiles(t *testing.T) {
	home := t.TempDir()
	fake := &fakeLaunchctl{t: t, prints: map[string]string{}}
	l := NewLaunchd(fake, "gui/501", home)
	s := agentDeclaration()
	content, _ := RenderLaunchd(s, home)
	if _, err := l.Install(context.Background(), s, content); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(LaunchdLogPath(home, s.Unit), []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := l.Logs(context.Background(), s.Unit, 2)
	if err != nil || !reflect.DeepEqual(got, []string{"two", "three"}) {
		t.Fatalf("logs %v %v", got, err)
	}
}

func TestJournalArgvSelectsOnlyWhatTheProgramPrinted(t *testing.T) {
	cases := []struct {
		scope string
		want  []string
	}{
		// The system journal, matched on the unit's own processes: -u would
		// add systemd's lines about the unit (exited, restarting, stopped).
		{declaration.ScopeSystem, []string{"journalctl", "_SYSTEMD_UNIT=brama.service", "-n", "50", "-o", "short-iso", "--no-pager"}},
		// The user journal, where the field is the user unit.
		{declaration.ScopeUser, []string{"journalctl", "--user", "_SYSTEMD_USER_UNIT=brama.service", "-n", "50", "-o", "short-iso", "--no-pager"}},
	}
	for _, c := range cases {
		if got := JournalArgv(c.scope, "brama.service", 50); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.scope, got, c.want)
		}
	}
}

func TestRenderRefusesValuesNoUnitCanCarry(t *testing.T) {
	base := declaration.Service{Name: "x", Unit: "x.service", Program: "/bin/x"}
	cases := []struct {
		name  string
		edit  func(*declaration.Service)
		field string
	}{
		{"carriage return in an argument", func(s *declaration.Service) { s.Args = []string{"ok", "a\rb"} }, "args[1]"},
		{"NUL in an argument", func(s *declaration.Service) { s.Args = []string{"a\x00b"} }, "args[0]"},
		{"newline in env", func(s *declaration.Service) { s.Env = map[string]string{"K": "a\r\nb"} }, "env.K"},
		{"bad env name", func(s *declaration.Service) { s.Env = map[string]string{"A-B": "v"} }, "env.A-B"},
		{"relative program", func(s *declaration.Service) { s.Program = "bin/x" }, "program"},
		{"invalid UTF-8", func(s *declaration.Service) { s.Args = []string{"\xff"} }, "args[0]"},
		{"newline in name", func(s *declaration.Service) { s.Name = "a\nb" }, "name"},
	}
	for _, c := range cases {
		for _, goos := range bothOS {
			s := base
			if goos == declaration.OSDarwin {
				s.Unit = "com.example.x"
			}
			c.edit(&s)
			_, err := Render(s, goos, "/var/root")
			fe, ok := err.(*FieldError)
			if !ok || fe.Field != c.field {
				t.Errorf("%s/%s: got %v, want a FieldError on %s", c.name, goos, err, c.field)
			}
		}
	}
	inc := declaration.Service{Name: "x", Unit: "x.service", IncompleteReason: "several ExecStart= lines"}
	_, err := RenderSystemd(inc)
	ie, ok := err.(*IncompleteError)
	if !ok || ie.RefusalCode() != "declaration_incomplete" || !strings.Contains(err.Error(), "several ExecStart") {
		t.Errorf("incomplete declaration: got %v", err)
	}
}

// A target's declared launchd domain is where its user-scope jobs are
// bootstrapped and acted on; its plist stays in the user's LaunchAgents.
// No domain keeps gui/<uid> of the account; system scope is always system.
func TestLaunchdForUserScopeUsesTheDeclaredDomain(t *testing.T) {
	home := t.TempDir()
	a := Account{Name: "builder", UID: 501, Home: home}
	plist := home + "/Library/LaunchAgents/com.wisent.brama.plist"
	for _, c := range []struct {
		scope, domain, want string
	}{
		{declaration.ScopeUser, "", "gui/501"},
		{declaration.ScopeUser, "gui/502", "gui/502"},
		{declaration.ScopeUser, "system", "system"},
		{declaration.ScopeSystem, "gui/502", "system"},
	} {
		t.Run(c.scope+"_"+c.domain, func(t *testing.T) {
			// loaded: kickstart addresses the job in the domain
			fake := &fakeLaunchctl{t: t, prints: map[string]string{c.want + "/com.wisent.brama": "running-system-wazuh.txt"}}
			l := LaunchdFor(fake, c.scope, c.domain, a)
			if err := l.Restart(context.Background(), "com.wisent.brama"); err != nil {
				t.Fatal(err)
			}
			if want := [][]string{{"/bin/launchctl", "kickstart", "-k", c.want + "/com.wisent.brama"}}; !reflect.DeepEqual(fake.acts(), want) {
				t.Fatalf("acts %v, want %v", fake.acts(), want)
			}
			if c.scope != declaration.ScopeUser {
				return
			}
			// not loaded: bootstrap into the domain from the user's plist
			fake = &fakeLaunchctl{t: t}
			l = LaunchdFor(fake, c.scope, c.domain, a)
			if err := l.Restart(context.Background(), "com.wisent.brama"); err != nil {
				t.Fatal(err)
			}
			if want := [][]string{{"/bin/launchctl", "bootstrap", c.want, plist}}; !reflect.DeepEqual(fake.acts(), want) {
				t.Fatalf("acts %v, want %v", fake.acts(), want)
			}
		})
	}
}
