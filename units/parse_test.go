package units

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/wisent/stado/registry"
)

func TestParseSystemdReadsUnitSyntax(t *testing.T) {
	f := false
	cases := []struct {
		name    string
		unit    string
		dropins []string
		want    registry.Service // when complete
		reason  string           // when incomplete: a substring of the reason
	}{
		// Continuation lines, comments between them, and quoting.
		{name: "continuation", unit: "[Service]\nExecStart=/bin/echo \\\n# a comment inside\n  \"two words\" \\\n  three\nRestart=always\n",
			want: registry.Service{Name: "x", Unit: "x.service", Scope: "system", Program: "/bin/echo", Args: []string{"two words", "three"}}},
		// Comments with '#' and ';', blank lines, CRLF endings.
		{name: "comments and CRLF", unit: "# head\r\n; other\r\n\r\n[Service]\r\nExecStart=/bin/true\r\nRestart=always\r\n",
			want: registry.Service{Name: "x", Unit: "x.service", Scope: "system", Program: "/bin/true"}},
		// Escapes in quoted and unquoted words, %% and $$ unescaped.
		{name: "escapes", unit: "[Service]\nExecStart=/bin/echo 'single \"q\"' a\\sb \"tab\\there\" 100%% $$HOME\nRestart=always\n",
			want: registry.Service{Name: "x", Unit: "x.service", Scope: "system", Program: "/bin/echo", Args: []string{`single "q"`, "a b", "tab\there", "100%", "$HOME"}}},
		// A drop-in resets ExecStart and sets another; Environment accumulates.
		{name: "drop-in resets ExecStart", unit: "[Service]\nExecStart=/bin/old\nEnvironment=A=1\nRestart=always\n",
			dropins: []string{"[Service]\nExecStart=\nExecStart=/bin/new --flag\nEnvironment=\"B=two words\"\n"},
			want:    registry.Service{Name: "x", Unit: "x.service", Scope: "system", Program: "/bin/new", Args: []string{"--flag"}, Env: map[string]string{"A": "1", "B": "two words"}}},
		// Drop-ins apply in order: the last Restart wins.
		{name: "drop-ins in order", unit: "[Service]\nExecStart=/bin/true\nRestart=always\n",
			dropins: []string{"[Service]\nRestart=on-failure\n", "[Service]\nRestart=no\n"},
			want:    registry.Service{Name: "x", Unit: "x.service", Scope: "system", Program: "/bin/true", KeepAlive: &f}},
		// No Restart= means the supervisor never restarts it.
		{name: "no restart", unit: "[Service]\nExecStart=/bin/true\n",
			want: registry.Service{Name: "x", Unit: "x.service", Scope: "system", Program: "/bin/true", KeepAlive: &f}},
		// '+', '!' and ':' prefixes keep it complete; ':' makes '$' literal.
		{name: "accepted prefixes", unit: "[Service]\nExecStart=+!:/bin/echo $HOME\nRestart=always\n",
			want: registry.Service{Name: "x", Unit: "x.service", Scope: "system", Program: "/bin/echo", Args: []string{"$HOME"}}},
		// WantedBy=default.target is a user unit.
		{name: "user unit", unit: "[Service]\nExecStart=/bin/true\nRestart=always\n[Install]\nWantedBy=default.target\n",
			want: registry.Service{Name: "x", Unit: "x.service", Scope: "user", Program: "/bin/true"}},
		// Incomplete: '-' prefix.
		{name: "dash prefix", unit: "[Service]\nExecStart=-/bin/true\n", reason: "prefix '-'"},
		// Incomplete: '@' prefix.
		{name: "at prefix", unit: "[Service]\nExecStart=@/bin/true fake\n", reason: "prefix '@'"},
		// Incomplete: several ExecStart lines.
		{name: "several ExecStart", unit: "[Service]\nExecStart=/bin/a\nExecStart=/bin/b\n", reason: "2 ExecStart= lines"},
		// Incomplete: commands separated by ';'.
		{name: "semicolon commands", unit: "[Service]\nExecStart=/bin/a ; /bin/b\nRestart=always\n", reason: "separated by ';'"},
		// Incomplete: a specifier, quoted verbatim in the reason.
		{name: "specifier", unit: "[Service]\nExecStart=/bin/echo %h/data\nRestart=always\n", reason: "specifier %h in \"%h/data\""},
		// Incomplete: variable expansion.
		{name: "variable", unit: "[Service]\nExecStart=/bin/echo ${FOO}\nRestart=always\n", reason: "expands a variable"},
		// Incomplete: oneshot.
		{name: "oneshot", unit: "[Service]\nType=oneshot\nExecStart=/bin/true\n", reason: "Type=oneshot"},
		// Incomplete: a restart policy between always and never.
		{name: "on-failure", unit: "[Service]\nExecStart=/bin/true\nRestart=on-failure\n", reason: "Restart=on-failure"},
		// Incomplete: a directive that changes what runs, named with its line.
		{name: "user directive", unit: "[Unit]\nDescription=d\n[Service]\nUser=nobody\nExecStart=/bin/true\n", reason: "User= in [Service] at x.service:4"},
		// Incomplete: socket activation from the service side.
		{name: "sockets", unit: "[Service]\nSockets=x.socket\nExecStart=/bin/true\n", reason: "socket-activated"},
		// Incomplete: a relative program.
		{name: "relative program", unit: "[Service]\nExecStart=true\nRestart=always\n", reason: "not an absolute path"},
		// Incomplete: no ExecStart left after a reset.
		{name: "reset to nothing", unit: "[Service]\nExecStart=/bin/true\nExecStart=\n", reason: "no ExecStart="},
		// Incomplete: an EnvironmentFile cannot be carried.
		{name: "environment file", unit: "[Service]\nEnvironmentFile=/etc/default/x\nExecStart=/bin/true\n", reason: "EnvironmentFile="},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var dropins [][]byte
			for _, d := range c.dropins {
				dropins = append(dropins, []byte(d))
			}
			p, err := ParseSystemd([]byte(c.unit), "x.service", dropins)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if c.reason != "" {
				if p.Complete || !strings.Contains(p.Reason, c.reason) {
					t.Fatalf("want incomplete with %q, got complete=%v reason %q", c.reason, p.Complete, p.Reason)
				}
				if p.Service.Program != "" || p.Service.IncompleteReason != p.Reason || p.Service.Unit != "x.service" {
					t.Fatalf("incomplete declaration must be path-only with its reason: %+v", p.Service)
				}
				return
			}
			if !p.Complete {
				t.Fatalf("incomplete: %s", p.Reason)
			}
			if !reflect.DeepEqual(p.Service, c.want) {
				t.Errorf("\n got %#v\nwant %#v", p.Service, c.want)
			}
		})
	}
}

func TestParseSystemdNamesTheKindOfUnitItCannotRepresent(t *testing.T) {
	cases := map[string]string{
		"x.socket":   "socket unit",   // socket activation
		"x.timer":    "not a service", // another kind of unit
		"x@.service": "template unit", // instance-dependent command
	}
	for name, want := range cases {
		p, err := ParseSystemd([]byte("[Service]\nExecStart=/bin/true\n"), name, nil)
		if err != nil || p.Complete || !strings.Contains(p.Reason, want) {
			t.Errorf("%s: err %v complete %v reason %q, want %q", name, err, p.Complete, p.Reason, want)
		}
	}
}

func TestParseSystemdRefusesUnreadableFilesNamingTheLine(t *testing.T) {
	cases := map[string]string{
		"[Service]\nExecStart=/bin/true\ngarbage line\n": "x.service:3",
		"ExecStart=/bin/true\n":                          "x.service:1",
		"[Service\nExecStart=/bin/true\n":                "x.service:1",
		"[Service]\nExecStart=/bin/\xff\n":               "UTF-8",
	}
	for in, want := range cases {
		_, err := ParseSystemd([]byte(in), "x.service", nil)
		var se *SyntaxError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), want) || !errors.Is(err, registry.ErrInvalid) {
			t.Errorf("%q: got %v, want a SyntaxError naming %q", in, err, want)
		}
	}
}

func TestParsePlistReadsProgramAndKeepAliveForms(t *testing.T) {
	head := `<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><dict><key>Label</key><string>com.example.job</string>`
	tail := `</dict></plist>`
	f := false
	cases := []struct {
		name   string
		body   string
		want   registry.Service
		reason string
	}{
		// Program alone.
		{name: "program only", body: `<key>Program</key><string>/bin/job</string><key>KeepAlive</key><true/>`,
			want: registry.Service{Name: "job", Unit: "com.example.job", Scope: "system", Program: "/bin/job"}},
		// Program agreeing with ProgramArguments[0].
		{name: "program and arguments", body: `<key>Program</key><string>/bin/job</string><key>ProgramArguments</key><array><string>/bin/job</string><string>-v</string></array><key>KeepAlive</key><true/>`,
			want: registry.Service{Name: "job", Unit: "com.example.job", Scope: "system", Program: "/bin/job", Args: []string{"-v"}}},
		// RunAtLoad without KeepAlive: run once.
		{name: "run at load only", body: `<key>ProgramArguments</key><array><string>/bin/job</string></array><key>RunAtLoad</key><true/>`,
			want: registry.Service{Name: "job", Unit: "com.example.job", Scope: "system", Program: "/bin/job", KeepAlive: &f}},
		// Program differing from argv[0].
		{name: "argv0 differs", body: `<key>Program</key><string>/bin/job</string><key>ProgramArguments</key><array><string>job</string></array><key>KeepAlive</key><true/>`, reason: "differs from ProgramArguments[0]"},
		// KeepAlive as a dictionary of conditions.
		{name: "keepalive dict", body: `<key>ProgramArguments</key><array><string>/bin/job</string></array><key>KeepAlive</key><dict><key>SuccessfulExit</key><false/></dict>`, reason: "dictionary of conditions"},
		// A key that changes what runs.
		{name: "username", body: `<key>ProgramArguments</key><array><string>/bin/job</string></array><key>KeepAlive</key><true/><key>UserName</key><string>nobody</string>`, reason: "key UserName"},
		// On demand only.
		{name: "on demand", body: `<key>ProgramArguments</key><array><string>/bin/job</string></array>`, reason: "only runs on demand"},
		// A relative program.
		{name: "relative", body: `<key>ProgramArguments</key><array><string>job</string></array><key>KeepAlive</key><true/>`, reason: "not an absolute path"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := ParsePlist([]byte(head + c.body + tail))
			if err != nil {
				t.Fatal(err)
			}
			if c.reason != "" {
				if p.Complete || !strings.Contains(p.Reason, c.reason) || p.Service.Program != "" {
					t.Fatalf("want incomplete with %q, got %+v", c.reason, p)
				}
				return
			}
			if !p.Complete || !reflect.DeepEqual(p.Service, c.want) {
				t.Errorf("\n got %+v (%s)\nwant %+v", p.Service, p.Reason, c.want)
			}
		})
	}
	if _, err := ParsePlist([]byte(head[:len(head)-20])); err == nil {
		t.Error("a broken plist parsed")
	}
	if _, err := ParsePlist([]byte(`<?xml version="1.0"?><plist version="1.0"><dict></dict></plist>`)); err == nil {
		t.Error("a plist without Label parsed")
	}
}

// TestEveryDebianUnitParsesWithoutCrash reads every unit file under this
// machine's /lib/systemd/system, with its drop-ins, and checks that each is
// complete or incomplete with a reason.
func TestEveryDebianUnitParsesWithoutCrash(t *testing.T) {
	const dir = "/lib/systemd/system"
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("read %s: %v", dir, err)
	}
	var complete, incomplete, unreadable, total int
	reasons := map[string]int{}
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		info, err := os.Stat(path)
		if err != nil || info.IsDir() {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		total++
		dropins := readDropins(t, path+".d")
		p, err := ParseFile(path, data, dropins)
		switch {
		case err != nil:
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Errorf("%s: an error that is not a SyntaxError: %v", path, err)
			}
			unreadable++
		case p.Complete:
			complete++
			if p.Service.Program == "" {
				t.Errorf("%s: complete without a program", path)
			}
		default:
			incomplete++
			if p.Reason == "" || p.Service.IncompleteReason == "" {
				t.Errorf("%s: incomplete without a reason", path)
			}
			key, _, _ := strings.Cut(strings.ReplaceAll(p.Reason, p.Service.Unit, "<unit>"), " at ")
			key, _, _ = strings.Cut(key, ":")
			reasons[key]++
		}
	}
	if total < 100 {
		t.Fatalf("only %d unit files under %s", total, dir)
	}
	t.Logf("%d unit files: %d complete, %d incomplete, %d unreadable", total, complete, incomplete, unreadable)
	type kv struct {
		k string
		n int
	}
	var top []kv
	for k, n := range reasons {
		top = append(top, kv{k, n})
	}
	sort.Slice(top, func(i, j int) bool { return top[i].n > top[j].n || top[i].n == top[j].n && top[i].k < top[j].k })
	for i := 0; i < len(top) && i < 12; i++ {
		t.Logf("  %4d  %s", top[i].n, top[i].k)
	}
}

func readDropins(t *testing.T, dir string) [][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out [][]byte
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".conf") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, data)
	}
	return out
}

// ParseFile takes the scope from the directory the init system read the
// file from, wherever on its search path that is; elsewhere the unit's own
// words decide.
func TestParseFileTakesTheScopeFromTheUnitDirectory(t *testing.T) {
	const systemdUnit = "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=default.target\n"
	plist := []byte(`<?xml version="1.0" encoding="UTF-8"?>
<plist version="1.0"><dict><key>Label</key><string>com.example.job</string>
<key>ProgramArguments</key><array><string>/bin/true</string></array></dict></plist>`)
	cases := []struct {
		path  string
		data  []byte
		scope string
	}{
		// The directories stado installs in.
		{"/etc/systemd/system/x.service", []byte(systemdUnit), registry.ScopeSystem},
		{"/home/op/.config/systemd/user/x.service", []byte(systemdUnit), registry.ScopeUser},
		{"/Library/LaunchDaemons/com.example.job.plist", plist, registry.ScopeSystem},
		{"/Users/op/Library/LaunchAgents/com.example.job.plist", plist, registry.ScopeUser},
		// Vendor directories of the search path.
		{"/usr/lib/systemd/user/x.service", []byte(systemdUnit), registry.ScopeUser},
		{"/lib/systemd/system/x.service", []byte(systemdUnit), registry.ScopeSystem},
		// No unit directory: WantedBy=default.target says user.
		{"/tmp/x.service", []byte(systemdUnit), registry.ScopeUser},
	}
	for _, c := range cases {
		p, err := ParseFile(c.path, c.data, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		if p.Service.Scope != c.scope || p.Service.UnitPath != c.path {
			t.Errorf("%s: scope %q, unit path %q; want %q and the path", c.path, p.Service.Scope, p.Service.UnitPath, c.scope)
		}
	}
}
