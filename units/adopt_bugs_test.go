package units

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// One test per bug issue 14 named.

func TestLaunchctlPrintKeepsTopLevelFieldsAfterANamedBlock(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "launchctl", "nested-endpoints-then-state.txt"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := ParseLaunchctlPrint(data)
	if err != nil {
		t.Fatal(err)
	}
	want := LaunchdState{Found: true, Label: "com.example.relay", State: "running", PID: 812, LastExit: 1, Exited: true, Runs: 4,
		Program: "/usr/local/bin/relay", Arguments: []string{"/usr/local/bin/relay", "--listen", "127.0.0.1:8080"},
		Path: "/Library/LaunchDaemons/relay.plist", Domain: "system", StdoutPath: "/var/log/relay.out", StderrPath: "/var/log/relay.err"}
	if !reflect.DeepEqual(st, want) {
		t.Errorf("\n got %+v\nwant %+v", st, want)
	}
}

func TestLaunchctlListLabelIsParsed(t *testing.T) {
	cases := []struct {
		file string
		want LaunchdState
	}{
		// Running, previous run exited 1 (wait status 256).
		{"list-label-running.txt", LaunchdState{Found: true, Label: "com.example.relay", State: "running", PID: 812, LastExit: 1, Exited: true,
			Program: "/usr/local/bin/relay", Arguments: []string{"/usr/local/bin/relay", "--listen", "127.0.0.1:8080"},
			StdoutPath: "/var/log/relay.out", StderrPath: "/var/log/relay.err"}},
		// Not running, killed by signal 9.
		{"list-label-killed.txt", LaunchdState{Found: true, Label: "com.example.agent", State: "not running", Exited: true, LastSignal: "signal: 9",
			Program: "/usr/local/bin/agent", Arguments: []string{"/usr/local/bin/agent"}}},
		// Not held by launchd.
		{"list-label-missing.txt", LaunchdState{Found: false}},
	}
	for _, c := range cases {
		data, err := os.ReadFile(filepath.Join("testdata", "launchctl", c.file))
		if err != nil {
			t.Fatal(err)
		}
		st, err := ParseLaunchctlList(data)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if !reflect.DeepEqual(st, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.file, st, c.want)
		}
	}
	if _, err := ParseLaunchctlList([]byte("PID\tStatus\tLabel\n")); err == nil {
		t.Error("a listing without a Label parsed")
	}
	if v := VerdictFromLaunchd("com.example.agent", LaunchdState{Found: true, Exited: true, LastSignal: "signal: 9"}); v.State != StateFailing || v.LastExit != 9 {
		t.Errorf("a job killed by signal 9 reads %+v", v)
	}
}

func TestMaskedSystemdUnitReadsMasked(t *testing.T) {
	v := VerdictFromSystemd("x.service", SystemdProperties{LoadState: "masked", ActiveState: "inactive", SubState: "dead"})
	if v.State != StateMasked {
		t.Errorf("masked unit reads %s, want %s", v.State, StateMasked)
	}
	if v := VerdictFromSystemd("x.service", SystemdProperties{LoadState: "not-found"}); v.State != StateMissing {
		t.Errorf("a unit systemd does not know reads %s", v.State)
	}
}

func TestDisabledFalseDoesNotMakeAPlistIncomplete(t *testing.T) {
	p, err := ParsePlist([]byte(plistOf(`<key>ProgramArguments</key><array><string>/bin/job</string></array><key>KeepAlive</key><true/><key>Disabled</key><false/>`)))
	if err != nil || !p.Complete {
		t.Fatalf("Disabled=false: complete %v (%s), err %v", p.Complete, p.Reason, err)
	}
}

func TestLimitLoadToSessionTypeIsKeptAndTheRealBlockerNamed(t *testing.T) {
	body := `<key>ProgramArguments</key><array><string>/bin/job</string></array><key>KeepAlive</key><true/>` +
		`<key>LimitLoadToSessionType</key><array><string>Aqua</string><string>Background</string><string>LoginWindow</string><string>StandardIO</string><string>System</string></array>` +
		`<key>WorkingDirectory</key><string>/var/job</string><key>Sockets</key><dict/>`
	p, err := ParsePlist([]byte(plistOf(body)))
	if err != nil {
		t.Fatal(err)
	}
	if p.Complete || len(p.Blockers) != 1 || p.Blockers[0].Key != "Sockets" {
		t.Fatalf("want one blocker, Sockets; got %+v", p.Blockers)
	}
	p, _ = ParsePlist([]byte(plistOf(strings.Replace(body, `<key>Sockets</key><dict/>`, "", 1))))
	if !p.Complete || p.Service.WorkingDirectory != "/var/job" || p.Service.LaunchdKeys["LimitLoadToSessionType"] == "" {
		t.Fatalf("without Sockets: %+v %s", p.Service, p.Reason)
	}
}

func TestEveryBlockerIsListedWithItsDropInByName(t *testing.T) {
	unit := "[Service]\nExecStart=@/bin/a x\nSockets=a.socket\n[Socket]\nListenStream=80\n"
	drop := DropIn{Path: "/etc/systemd/system/a.service.d/override.conf", Content: "[Service]\nStandardInput=socket\n"}
	p, err := ParseUnitFile("/etc/systemd/system/a.service", []byte(unit), []DropIn{drop})
	if err != nil {
		t.Fatal(err)
	}
	if p.Complete || len(p.Blockers) != 4 {
		t.Fatalf("want 4 blockers, got %d: %s", len(p.Blockers), p.Reason)
	}
	files := map[string]bool{}
	for _, b := range p.Blockers {
		files[b.File] = true
		if b.Fix == "" || b.Key == "" {
			t.Errorf("blocker without key or fix: %+v", b)
		}
	}
	if !files["a.service.d/override.conf"] || !files["a.service"] {
		t.Errorf("blockers name files %v, want a.service and a.service.d/override.conf", files)
	}
	if strings.Contains(p.Reason, "drop-in #") {
		t.Errorf("a drop-in is named by number: %s", p.Reason)
	}
}

func TestADropInIsPointedAtItsUnit(t *testing.T) {
	p, err := ParseUnitFile("/etc/systemd/system/a.service.d/override.conf", []byte("[Service]\nNice=5\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Complete || !strings.Contains(p.Reason, "drop-in") || !strings.Contains(p.Reason, "--dropins") {
		t.Fatalf("a drop-in parsed as %v: %s", p.Complete, p.Reason)
	}
}

func TestAStaticUnitRendersWithoutInstallAndKeepsItsTarget(t *testing.T) {
	p, _ := ParseSystemd([]byte("[Unit]\nAfter=network.target\nWants=network-online.target\n[Service]\nExecStart=/bin/true\n"), "s.service", nil)
	out, err := RenderSystemd(p.Service)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "[Install]") || !strings.Contains(string(out), "After=network.target") || !strings.Contains(string(out), "Wants=network-online.target") {
		t.Errorf("static unit rendered:\n%s", out)
	}
	if strings.Contains(string(out), "PATH=") {
		t.Errorf("PATH injected into an adopted unit:\n%s", out)
	}
	p, _ = ParseSystemd([]byte("[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=graphical.target\n"), "g.service", nil)
	out, _ = RenderSystemd(p.Service)
	if !strings.Contains(string(out), "WantedBy=graphical.target") || strings.Contains(string(out), "multi-user") {
		t.Errorf("WantedBy changed:\n%s", out)
	}
}

func TestAnAdoptedPlistKeepsItsLogsThrottleAndProcessType(t *testing.T) {
	body := `<key>ProgramArguments</key><array><string>/bin/job</string></array><key>KeepAlive</key><true/>` +
		`<key>StandardOutPath</key><string>/var/log/job.out</string><key>StandardErrorPath</key><string>/var/log/job.err</string>` +
		`<key>ThrottleInterval</key><integer>60</integer><key>ProcessType</key><string>Interactive</string>`
	p, err := ParsePlist([]byte(plistOf(body)))
	if err != nil || !p.Complete {
		t.Fatalf("%v %s", err, p.Reason)
	}
	out, err := RenderLaunchd(p.Service, "/Users/op")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"/var/log/job.out", "/var/log/job.err", "<integer>60</integer>", "Interactive"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("rendering lost %s:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "PATH") || strings.Contains(string(out), ".stado/logs") {
		t.Errorf("stado defaults leaked into an adopted plist:\n%s", out)
	}
}

func TestServiceEnvOfAnIncompletePlistIsItsRealEnvironment(t *testing.T) {
	p, err := ParsePlist([]byte(plistOf(`<key>ProgramArguments</key><array><string>/bin/job</string></array><key>Sockets</key><dict/><key>EnvironmentVariables</key><dict><key>TOKEN</key><string>t</string></dict>`)))
	if err != nil {
		t.Fatal(err)
	}
	if p.Complete || p.Env["TOKEN"] != "t" {
		t.Errorf("incomplete plist: env %v", p.Env)
	}
}

func plistOf(body string) string {
	return `<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><dict><key>Label</key><string>com.example.job</string>` + body + `</dict></plist>`
}

func TestLaunchdUsesThePlistPathLaunchctlPrintNames(t *testing.T) {
	fake := &fakeLaunchctl{t: t, prints: map[string]string{"system/com.example.relay": "nested-endpoints-then-state.txt"}}
	l := NewLaunchd(fake, "system", t.TempDir())
	path, _, err := l.UnitFiles(context.Background(), "com.example.relay")
	if err != nil || path != "/Library/LaunchDaemons/relay.plist" {
		t.Errorf("plist path %q (%v), want the one launchctl print names", path, err)
	}
	path, _, _ = l.UnitFiles(context.Background(), "com.example.unloaded")
	if path != "/Library/LaunchDaemons/com.example.unloaded.plist" {
		t.Errorf("an unloaded label's plist path %q, want the domain's default", path)
	}
}

func TestPlistScopeComesFromItsDirectoryOrIsStatedAsAGuess(t *testing.T) {
	data := []byte(plistOf(`<key>ProgramArguments</key><array><string>/bin/job</string></array><key>KeepAlive</key><true/>`))
	p, _ := ParseUnitFile("/Library/LaunchAgents/job.plist", data, nil)
	if p.Service.Scope != "user" || p.ScopeGuess != "" {
		t.Errorf("/Library/LaunchAgents: scope %s guess %q", p.Service.Scope, p.ScopeGuess)
	}
	p, _ = ParseUnitFile("/opt/job/job.plist", data, nil)
	if p.ScopeGuess == "" {
		t.Errorf("a plist outside the launchd directories states no guess")
	}
}

func TestAGeneratedUnitIsIncomplete(t *testing.T) {
	p, err := ParseUnitFile("/run/systemd/generator/data.mount", []byte("[Mount]\nWhat=/dev/sdb1\nWhere=/data\n"), nil)
	if err != nil || p.Complete {
		t.Fatalf("generated mount: %v %v", err, p.Complete)
	}
	p, err = ParseUnitFile("/run/systemd/generator.late/legacy.service", []byte("[Service]\nType=forking\nExecStart=/etc/init.d/legacy start\n"), nil)
	if err != nil || p.Complete || !strings.Contains(p.Reason, "generated") {
		t.Fatalf("generated service: %v %v %s", err, p.Complete, p.Reason)
	}
}

func TestAContinuedQuotedArgumentKeepsItsSpacesAsSystemdReadsThem(t *testing.T) {
	unit := "[Service]\nExecStart=/bin/sh -c \"a || \\\n b; \\\n c\"\n"
	p, err := ParseSystemd([]byte(unit), "x.service", nil)
	if err != nil || !p.Complete {
		t.Fatalf("%v %s", err, p.Reason)
	}
	if got := p.Service.Args[1]; got != "a ||   b;   c" {
		t.Errorf("continued argument %q, want the spaces systemd keeps (%q)", got, "a ||   b;   c")
	}
}
