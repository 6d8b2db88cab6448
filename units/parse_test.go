package units

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/wisent/stado/declaration"
	"github.com/wisent/stado/registry"
)

// adopted is a declaration as adopt records it: stado's defaults off, the
// settings as written.
func adopted(s declaration.Service, u declaration.UnitSettings) declaration.Service {
	f := false
	u.StadoDefaults = &f
	s.UnitSettings = u
	return s
}

func TestParseSystemdReadsUnitSyntax(t *testing.T) {
	f, tr := false, true
	always := declaration.UnitSettings{Restart: "always"}
	cases := []struct {
		name    string
		unit    string
		dropins []string
		want    declaration.Service // when complete
		reason  string              // when incomplete: a substring of the reason
	}{
		// Continuation lines, comments between them, and quoting.
		{name: "continuation", unit: "[Service]\nExecStart=/bin/echo \\\n# a comment inside\n  \"two words\" \\\n  three\nRestart=always\n",
			want: adopted(declaration.Service{Name: "x", Unit: "x.service", Scope: "system", Program: "/bin/echo", Args: []string{"two words", "three"}}, always)},
		// Comments with '#' and ';', blank lines, CRLF endings.
		{name: "comments and CRLF", unit: "# head\r\n; other\r\n\r\n[Service]\r\nExecStart=/bin/true\r\nRestart=always\r\n",
			want: adopted(declaration.Service{Name: "x", Unit: "x.service", Scope: "system", Program: "/bin/true"}, always)},
		// Escapes in quoted and unquoted words, %% and $$ unescaped.
		{name: "escapes", unit: "[Service]\nExecStart=/bin/echo 'single \"q\"' a\\sb \"tab\\there\" 100%% $$HOME\nRestart=always\n",
			want: adopted(declaration.Service{Name: "x", Unit: "x.service", Scope: "system", Program: "/bin/echo", Args: []string{`single "q"`, "a b", "tab\there", "100%", "$HOME"}}, always)},
		// A drop-in resets ExecStart and sets another; Environment accumulates.
		{name: "drop-in resets ExecStart", unit: "[Service]\nExecStart=/bin/old\nEnvironment=A=1\nRestart=always\n",
			dropins: []string{"[Service]\nExecStart=\nExecStart=/bin/new --flag\nEnvironment=\"B=two words\"\n"},
			want:    adopted(declaration.Service{Name: "x", Unit: "x.service", Scope: "system", Program: "/bin/new", Args: []string{"--flag"}, Env: map[string]string{"A": "1", "B": "two words"}}, always)},
		// Drop-ins apply in order: the last Restart wins.
		{name: "drop-ins in order", unit: "[Service]\nExecStart=/bin/true\nRestart=always\n",
			dropins: []string{"[Service]\nRestart=on-failure\n", "[Service]\nRestart=no\n"},
			want:    adopted(declaration.Service{Name: "x", Unit: "x.service", Scope: "system", Program: "/bin/true"}, declaration.UnitSettings{Restart: "no"})},
		// No Restart= means the supervisor never restarts it.
		{name: "no restart", unit: "[Service]\nExecStart=/bin/true\n",
			want: adopted(declaration.Service{Name: "x", Unit: "x.service", Scope: "system", Program: "/bin/true", KeepAlive: &f}, declaration.UnitSettings{})},
		// '+', '!' and '-' are carried as the prefix; ':' makes '$' literal.
		{name: "prefixes", unit: "[Service]\nExecStart=-+:/bin/echo $HOME\nRestart=always\n",
			want: adopted(declaration.Service{Name: "x", Unit: "x.service", Scope: "system", Program: "/bin/echo", Args: []string{"$HOME"}}, declaration.UnitSettings{Restart: "always", ExecStartPrefix: "-+"})},
		// WantedBy=default.target is a user unit.
		{name: "user unit", unit: "[Service]\nExecStart=/bin/true\nRestart=always\n[Install]\nWantedBy=default.target\n",
			want: adopted(declaration.Service{Name: "x", Unit: "x.service", Scope: "user", Program: "/bin/true"}, declaration.UnitSettings{Restart: "always", WantedBy: []string{"default.target"}})},
		// A variable in ExecStart is left for systemd to expand.
		{name: "variable", unit: "[Service]\nExecStart=/bin/echo ${FOO} $$lit\nRestart=always\n",
			want: adopted(declaration.Service{Name: "x", Unit: "x.service", Scope: "system", Program: "/bin/echo", Args: []string{"${FOO}", "$$lit"}}, declaration.UnitSettings{Restart: "always", ExpandEnv: true})},
		// What real units carry lands in its fields; the rest is kept verbatim.
		{name: "settings", unit: "[Unit]\nDescription=d\nAfter=network.target\nWants=a.service b.service\nConditionPathExists=/etc/x\n[Service]\nType=forking\nPIDFile=/run/x.pid\nUser=nobody\nGroup=nogroup\nUMask=0027\nWorkingDirectory=/var/lib/x\nEnvironmentFile=-/etc/default/x\nExecStartPre=/bin/x -t\nExecStart=/bin/true\nExecReload=/bin/kill -HUP $MAINPID\nRestart=on-failure\nRestartSec=5s\nLimitNOFILE=1024:4096\nKillMode=process\nDelegate=yes\nTimeoutStopSec=30\nWatchdogSec=1min 30s\nNice=5\nStandardOutput=append:/var/log/x.log\nProtectSystem=full\n[Install]\nWantedBy=graphical.target\n",
			want: adopted(declaration.Service{Name: "x", Unit: "x.service", Scope: "system", Program: "/bin/true"}, declaration.UnitSettings{
				Description: "d", After: []string{"network.target"}, Wants: []string{"a.service", "b.service"},
				Type: "forking", PIDFile: "/run/x.pid", User: "nobody", Group: "nogroup", UMask: "0027", WorkingDirectory: "/var/lib/x",
				EnvironmentFiles: []string{"-/etc/default/x"}, ExecStartPre: []string{"/bin/x -t"}, ExecReload: []string{"/bin/kill -HUP $MAINPID"},
				Restart: "on-failure", RestartSec: "5s", Limits: map[string]declaration.Limit{"nofile": {Soft: "1024", Hard: "4096"}},
				KillMode: "process", Delegate: &tr, TimeoutStopSec: "30", WatchdogSec: "1min 30s", Nice: intp(5), StdoutPath: "/var/log/x.log",
				WantedBy:    []string{"graphical.target"},
				SystemdKeys: []declaration.UnitKey{{Section: "Unit", Key: "ConditionPathExists", Value: "/etc/x"}, {Section: "Service", Key: "ProtectSystem", Value: "full"}},
			})},
		// Incomplete: '@' prefix.
		{name: "at prefix", unit: "[Service]\nExecStart=@/bin/true fake\n", reason: "prefix '@'"},
		// Incomplete: several ExecStart lines.
		{name: "several ExecStart", unit: "[Service]\nExecStart=/bin/a\nExecStart=/bin/b\n", reason: "one of 2 ExecStart= lines"},
		// Incomplete: commands separated by ';'.
		{name: "semicolon commands", unit: "[Service]\nExecStart=/bin/a ; /bin/b\nRestart=always\n", reason: "separated by ';'"},
		// Incomplete: a specifier in the command, quoted verbatim in the reason.
		{name: "specifier", unit: "[Service]\nExecStart=/bin/echo %h/data\nRestart=always\n", reason: "specifier %h in \"%h/data\""},
		// Incomplete: socket activation from the service side.
		{name: "sockets", unit: "[Service]\nSockets=x.socket\nExecStart=/bin/true\n", reason: "socket-activated"},
		// Incomplete: a relative program.
		{name: "relative program", unit: "[Service]\nExecStart=true\nRestart=always\n", reason: "not an absolute path"},
		// Incomplete: no ExecStart left after a reset.
		{name: "reset to nothing", unit: "[Service]\nExecStart=/bin/true\nExecStart=\n", reason: "no ExecStart="},
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

func intp(n int) *int { return &n }

func TestParseSystemdNamesTheKindOfUnitItCannotRepresent(t *testing.T) {
	cases := map[string]string{
		"x.socket":   "socket unit",   // socket activation
		"x.timer":    "not a service", // another kind of unit
		"x@.service": "is a template", // instance-dependent command, no instance given
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
		want   declaration.Service
		reason string
	}{
		// Program alone.
		{name: "program only", body: `<key>Program</key><string>/bin/job</string><key>KeepAlive</key><true/>`,
			want: adopted(declaration.Service{Name: "job", Unit: "com.example.job", Scope: "system", Program: "/bin/job"}, declaration.UnitSettings{})},
		// Program agreeing with ProgramArguments[0].
		{name: "program and arguments", body: `<key>Program</key><string>/bin/job</string><key>ProgramArguments</key><array><string>/bin/job</string><string>-v</string></array><key>KeepAlive</key><true/>`,
			want: adopted(declaration.Service{Name: "job", Unit: "com.example.job", Scope: "system", Program: "/bin/job", Args: []string{"-v"}}, declaration.UnitSettings{})},
		// RunAtLoad without KeepAlive: run once, RunAtLoad kept as written.
		{name: "run at load only", body: `<key>ProgramArguments</key><array><string>/bin/job</string></array><key>RunAtLoad</key><true/>`,
			want: adopted(declaration.Service{Name: "job", Unit: "com.example.job", Scope: "system", Program: "/bin/job", KeepAlive: &f}, declaration.UnitSettings{LaunchdKeys: map[string]string{"RunAtLoad": "<true/>"}})},
		// Program differing from argv[0].
		{name: "argv0 differs", body: `<key>Program</key><string>/bin/job</string><key>ProgramArguments</key><array><string>job</string></array><key>KeepAlive</key><true/>`, reason: "differs from ProgramArguments[0]"},
		// KeepAlive {SuccessfulExit: false} is restart on-failure.
		{name: "keepalive dict", body: `<key>ProgramArguments</key><array><string>/bin/job</string></array><key>KeepAlive</key><dict><key>SuccessfulExit</key><false/></dict>`,
			want: adopted(declaration.Service{Name: "job", Unit: "com.example.job", Scope: "system", Program: "/bin/job"}, declaration.UnitSettings{Restart: "on-failure"})},
		// Other KeepAlive conditions are kept verbatim.
		{name: "keepalive path state", body: `<key>ProgramArguments</key><array><string>/bin/job</string></array><key>KeepAlive</key><dict><key>PathState</key><dict><key>/tmp/x</key><true/></dict></dict>`,
			want: adopted(declaration.Service{Name: "job", Unit: "com.example.job", Scope: "system", Program: "/bin/job"}, declaration.UnitSettings{LaunchdKeys: map[string]string{"KeepAlive": "<dict><key>PathState</key><dict><key>/tmp/x</key><true/></dict></dict>"}})},
		// UserName, WorkingDirectory, ThrottleInterval, ProcessType land in fields; Disabled false is kept.
		{name: "settings", body: `<key>ProgramArguments</key><array><string>/bin/job</string></array><key>KeepAlive</key><true/><key>UserName</key><string>nobody</string><key>WorkingDirectory</key><string>/var/x</string><key>ThrottleInterval</key><integer>60</integer><key>ProcessType</key><string>Background</string><key>Disabled</key><false/><key>Umask</key><integer>18</integer>`,
			want: adopted(declaration.Service{Name: "job", Unit: "com.example.job", Scope: "system", Program: "/bin/job"}, declaration.UnitSettings{User: "nobody", WorkingDirectory: "/var/x", RestartSec: "60", ProcessType: "Background", UMask: "0022", LaunchdKeys: map[string]string{"Disabled": "<false/>"}})},
		// On demand only.
		{name: "on demand", body: `<key>ProgramArguments</key><array><string>/bin/job</string></array>`, reason: "only runs on demand"},
		// A relative program.
		{name: "relative", body: `<key>ProgramArguments</key><array><string>job</string></array><key>KeepAlive</key><true/>`, reason: "not an absolute path"},
		// Socket activation and a disabled job: both named.
		{name: "sockets and disabled", body: `<key>ProgramArguments</key><array><string>/bin/job</string></array><key>KeepAlive</key><true/><key>Sockets</key><dict/><key>Disabled</key><true/>`, reason: "Disabled"},
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
		{"/etc/systemd/system/x.service", []byte(systemdUnit), declaration.ScopeSystem},
		{"/home/op/.config/systemd/user/x.service", []byte(systemdUnit), declaration.ScopeUser},
		{"/Library/LaunchDaemons/com.example.job.plist", plist, declaration.ScopeSystem},
		{"/Users/op/Library/LaunchAgents/com.example.job.plist", plist, declaration.ScopeUser},
		// Vendor directories of the search path.
		{"/usr/lib/systemd/user/x.service", []byte(systemdUnit), declaration.ScopeUser},
		{"/lib/systemd/system/x.service", []byte(systemdUnit), declaration.ScopeSystem},
		// No unit directory: WantedBy=default.target says user.
		{"/tmp/x.service", []byte(systemdUnit), declaration.ScopeUser},
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
