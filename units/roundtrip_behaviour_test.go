package units

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"howett.net/plist"

	"github.com/wisent/stado/declaration"
)

// testHostname is the host name the round-trip tests adopt on (%H).
const testHostname = "node7.example"

// behaviour is what a unit makes its supervisor do, computed from the unit
// files alone, independently of the parser: the command, the environment,
// the account, the dependencies, the limits, and how systemd learns the
// service is up and still alive (Type=, WatchdogSec=).
type behaviour struct {
	Argv     []string
	Env      map[string]string
	User     string
	Group    string
	Deps     map[string][]string
	Limits   map[string]string
	Type     string
	Watchdog string
}

// systemdBehaviour computes what systemd does with a unit named unit read
// from path with its drop-ins on the host testHostname: the last ExecStart=
// after the last reset, Environment= words in order (the last assignment
// of a variable wins, an empty line resets), the last User=/Group=,
// dependency lists accumulated with resets, the last Limit*=, Type= and
// WatchdogSec=. Specifiers of the unit's name and %H are written out as
// systemd would.
func systemdBehaviour(t *testing.T, unit, path string, data []byte, dropins []DropIn) behaviour {
	t.Helper()
	entries, err := lexUnit(data, "unit")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dropins {
		de, err := lexUnit([]byte(d.Content), "drop-in")
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, de...)
	}
	vals := nameSpecifierValues(unit, path)
	vals['H'] = specifierValue{value: testHostname}
	b := behaviour{Env: map[string]string{}, Deps: map[string][]string{}, Limits: map[string]string{}}
	for _, e := range entries {
		v, _ := expandNameSpecifiers(e.value, vals)
		switch {
		case e.section == "Service" && e.key == "ExecStart":
			if v == "" {
				b.Argv = nil
				continue
			}
			cmd := strings.TrimLeft(v, "-@+!:|")
			words, err := splitWords(cmd, !strings.Contains(v[:len(v)-len(cmd)], ":"))
			if err != nil {
				t.Fatalf("%s: %v", v, err)
			}
			b.Argv = nil
			for _, w := range words {
				b.Argv = append(b.Argv, w.text)
			}
		case e.section == "Service" && e.key == "Environment":
			if v == "" {
				b.Env = map[string]string{}
				continue
			}
			words, err := splitWords(v, false)
			if err != nil {
				t.Fatalf("%s: %v", v, err)
			}
			for _, w := range words {
				k, val, _ := strings.Cut(w.text, "=")
				b.Env[k] = val
			}
		case e.section == "Service" && e.key == "User":
			b.User = v
		case e.section == "Service" && e.key == "Group":
			b.Group = v
		case e.section == "Service" && e.key == "Type":
			b.Type = v
		case e.section == "Service" && e.key == "WatchdogSec":
			b.Watchdog = v
		case strings.HasPrefix(e.key, "Limit") && e.section == "Service":
			b.Limits[e.key] = v
		case e.section == "Unit" && (e.key == "After" || e.key == "Before" || e.key == "Wants" || e.key == "Requires"),
			e.section == "Install" && (e.key == "WantedBy" || e.key == "RequiredBy"):
			if v == "" {
				delete(b.Deps, e.key)
				continue
			}
			b.Deps[e.key] = append(b.Deps[e.key], strings.Fields(v)...)
		}
	}
	for k, l := range b.Limits {
		if l == "" {
			delete(b.Limits, k)
		}
	}
	for k := range b.Deps {
		sort.Strings(b.Deps[k])
	}
	return b
}

// plistBehaviour computes what launchd does with a job: its
// ProgramArguments, EnvironmentVariables, UserName, GroupName and limits.
func plistBehaviour(t *testing.T, data []byte) behaviour {
	t.Helper()
	var doc map[string]any
	if _, err := plist.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	b := behaviour{Env: map[string]string{}, Deps: map[string][]string{}, Limits: map[string]string{}}
	if args, ok := doc["ProgramArguments"].([]any); ok {
		for _, a := range args {
			b.Argv = append(b.Argv, a.(string))
		}
	}
	if p, ok := doc["Program"].(string); ok && len(b.Argv) == 0 {
		b.Argv = []string{p}
	}
	if env, ok := doc["EnvironmentVariables"].(map[string]any); ok {
		for k, v := range env {
			b.Env[k], _ = v.(string)
		}
	}
	b.User, _ = doc["UserName"].(string)
	b.Group, _ = doc["GroupName"].(string)
	for _, side := range []string{"SoftResourceLimits", "HardResourceLimits"} {
		if m, ok := doc[side].(map[string]any); ok {
			for k, v := range m {
				b.Limits[side+"."+k] = fmt.Sprint(v)
			}
		}
	}
	return b
}

// roundTripCase is one unit the round trip runs over.
type roundTripCase struct {
	name    string // what it shows
	path    string // where it is installed
	unit    string // the unit it is read as ("" = the file's own)
	data    []byte
	dropins []DropIn
}

// checkRoundTrip parses c on testHostname, renders the declaration,
// parses the rendering back and checks: the same declaration, a stable
// rendering, and the same behaviour as the original files.
func checkRoundTrip(t *testing.T, c roundTripCase) (Parsed, []byte) {
	t.Helper()
	p, err := ParseUnitOn(testHostname, c.path, c.unit, c.data, c.dropins)
	if err != nil {
		t.Errorf("%s: %v", c.name, err)
		return p, nil
	}
	if !p.Complete {
		return p, nil
	}
	goos := declaration.OSLinux
	if IsPlist(c.data) {
		goos = declaration.OSDarwin
	}
	s := p.Service
	s.UnitPath = ""
	out, err := Render(s, goos, "/home/op")
	if err != nil {
		t.Errorf("%s: render: %v", c.name, err)
		return p, nil
	}
	back, err := ParseUnitOn(testHostname, c.path, s.Unit, out, nil)
	if err != nil || !back.Complete {
		t.Errorf("%s: the rendering does not parse back complete: %v %s\n%s", c.name, err, back.Reason, out)
		return p, out
	}
	b := back.Service
	b.UnitPath = ""
	if !reflect.DeepEqual(Canonical(s, goos, "/home/op"), Canonical(b, goos, "/home/op")) {
		t.Errorf("%s: parse(render(parse)) differs:\n got  %+v\n want %+v\n%s", c.name, b, s, out)
	}
	if again, _ := Render(b, goos, "/home/op"); string(again) != string(out) {
		t.Errorf("%s: render is not stable over a round trip", c.name)
	}
	var want, got behaviour
	if goos == declaration.OSDarwin {
		want, got = plistBehaviour(t, c.data), plistBehaviour(t, out)
	} else {
		unit := c.unit
		if unit == "" {
			unit = filepath.Base(c.path)
		}
		want = systemdBehaviour(t, unit, c.path, c.data, c.dropins)
		got = systemdBehaviour(t, s.Unit, filepath.Join(filepath.Dir(c.path), s.Unit), out, nil)
		// What the declaration adds of stado's own (none with
		// stado_defaults false) would show here.
	}
	if !reflect.DeepEqual(want, got) {
		t.Errorf("%s: the rendering behaves differently:\n got  %+v\n want %+v\n%s", c.name, got, want, out)
	}
	return p, out
}

// Every testdata unit (the corpus of packaged units with their drop-ins,
// and the property lists) round-trips with the same behaviour.
func TestRoundTripBehaviourOverEveryTestdataUnit(t *testing.T) {
	n := 0
	for _, u := range readCorpus(t) {
		if _, out := checkRoundTrip(t, roundTripCase{name: u.path, path: installPath(u), unit: corpusUnitName(u), data: u.data, dropins: u.dropins}); out != nil {
			n++
		}
	}
	plists, _ := filepath.Glob(filepath.Join("testdata", "plists", "*.plist"))
	for _, f := range plists {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, out := checkRoundTrip(t, roundTripCase{name: f, path: "/Library/LaunchDaemons/" + filepath.Base(f), data: data}); out != nil {
			n++
		}
	}
	if n < 60 {
		t.Errorf("%d testdata units round-tripped; want at least 60", n)
	}
}

// Issue 26, item 1: a verbatim Environment= word (a specifier) never
// outlives a later assignment of its variable, and the other words of its
// line stay the operator's.
func TestRoundTripLaterEnvironmentWinsOverAVerbatimLine(t *testing.T) {
	etcd, err := os.ReadFile(filepath.Join("testdata", "corpus", "etcd-server", "etcd.service"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []roundTripCase{
		// Debian's etcd (ETCD_NAME=%H) with an operator's drop-in.
		{name: "etcd with an override", path: "/lib/systemd/system/etcd.service", data: etcd,
			dropins: []DropIn{{Path: "/etc/systemd/system/etcd.service.d/override.conf", Content: "[Service]\nEnvironment=ETCD_NAME=node1\n"}}},
		// One file: the line with %H also sets MODE, which a later line changes.
		{name: "same file", path: "/etc/systemd/system/app.service",
			data: []byte("[Service]\nEnvironment=\"NAME=%H\" \"MODE=a\"\nEnvironment=MODE=b\nExecStart=/usr/bin/app\n")},
		// The verbatim word comes last and wins over an earlier typed one.
		{name: "verbatim last", path: "/etc/systemd/system/app.service",
			data: []byte("[Service]\nEnvironment=NAME=x\nEnvironment=NAME=%H MODE=a\nExecStart=/usr/bin/app\n")},
	}
	want := []map[string]string{
		{"DAEMON_ARGS": "", "ETCD_NAME": "node1", "ETCD_DATA_DIR": "/var/lib/etcd/default"},
		{"NAME": testHostname, "MODE": "b"},
		{"NAME": testHostname, "MODE": "a"},
	}
	for i, c := range cases {
		p, out := checkRoundTrip(t, c)
		if out == nil {
			t.Errorf("%s: not complete: %s", c.name, p.Reason)
			continue
		}
		if got := systemdBehaviour(t, p.Service.Unit, c.path, out, nil).Env; !reflect.DeepEqual(got, want[i]) {
			t.Errorf("%s: env %v, want %v\n%s", c.name, got, want[i], out)
		}
	}
}

// Issue 26, item 2: every blocker of every ExecStart= at once: the extra
// line, the '@' prefix and the relative program (initrd-parse-etc.service
// of systemd 252 reduced to its commands).
func TestEveryExecStartBlockerIsListedAtOnce(t *testing.T) {
	unit := "[Unit]\nDescription=Mountpoints Configured in the Real Root\n\n[Service]\nType=oneshot\n" +
		"ExecStart=-/usr/bin/systemctl --no-block start initrd-fs.target\n" +
		"ExecStart=@systemd-sysroot-fstab-check systemd-sysroot-fstab-check\n"
	p, err := ParseUnitOn(testHostname, "/lib/systemd/system/initrd-parse-etc.service", "", []byte(unit), nil)
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, b := range p.Blockers {
		reasons = append(reasons, b.Reason)
	}
	all := strings.Join(reasons, "\n")
	for _, want := range []string{"one of 2 ExecStart", "prefix '@'", `"systemd-sysroot-fstab-check", which is not an absolute path`} {
		if !strings.Contains(all, want) {
			t.Errorf("no blocker says %q:\n%s", want, all)
		}
	}
	if p.Complete || len(p.Blockers) != 3 {
		t.Errorf("want 3 blockers, got %d:\n%s", len(p.Blockers), all)
	}
}

// Issue 26, item 3: an [X-…] section, which systemd ignores, is kept and
// rendered back as it was; another section still blocks.
func TestRoundTripKeepsAnXSection(t *testing.T) {
	unit := "[Service]\nExecStart=/usr/bin/app\n\n[Install]\nWantedBy=multi-user.target\n\n[X-Fleet]\nMachineOf=db.service\nConflicts=app*\n"
	c := roundTripCase{name: "x section", path: "/etc/systemd/system/app.service", data: []byte(unit)}
	p, out := checkRoundTrip(t, c)
	if out == nil {
		t.Fatalf("not complete: %s", p.Reason)
	}
	if !strings.Contains(string(out), "[X-Fleet]\nMachineOf=db.service\nConflicts=app*\n") {
		t.Errorf("the X- section is not rendered back:\n%s", out)
	}
	bad, err := ParseUnitOn(testHostname, "/etc/systemd/system/app.service", "", []byte("[Service]\nExecStart=/usr/bin/app\n[Socket]\nListenStream=80\n"), nil)
	if err != nil || bad.Complete {
		t.Errorf("a [Socket] section in a service adopts: %v %v", err, bad.Complete)
	}
}

// Issue 26, items 4 and 5: a launchd label with a space, and a line feed
// in an argument and a variable of a property list, round-trip.
func TestRoundTripLaunchdLabelWithASpaceAndLineFeeds(t *testing.T) {
	job := `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
	<key>Label</key><string>com.example.my job</string>
	<key>ProgramArguments</key><array><string>/usr/local/bin/job</string><string>line one
line two</string></array>
	<key>EnvironmentVariables</key><dict><key>MOTD</key><string>hello
world</string></dict>
	<key>KeepAlive</key><true/>
</dict>
</plist>
`
	p, out := checkRoundTrip(t, roundTripCase{name: "label with a space", path: "/Library/LaunchDaemons/com.example.my job.plist", data: []byte(job)})
	if out == nil {
		t.Fatalf("not complete: %s", p.Reason)
	}
	if p.Service.Unit != "com.example.my job" || p.Service.Args[0] != "line one\nline two" || p.Service.Env["MOTD"] != "hello\nworld" {
		t.Errorf("declaration %+v", p.Service)
	}
	// A carriage return and NUL stay refused on darwin; a line feed on linux.
	s := p.Service
	s.Args = []string{"a\rb"}
	if _, err := Render(s, declaration.OSDarwin, "/home/op"); err == nil {
		t.Errorf("a carriage return renders into a property list")
	}
	for _, label := range []string{"com.example.job ", "com.example. job", "com.example.a/b"} {
		if declaration.CheckUnitName(declaration.OSDarwin, label) == nil {
			t.Errorf("label %q is accepted", label)
		}
	}
	lin := declaration.Service{Name: "app", Unit: "app.service", Program: "/usr/bin/app", Args: []string{"a\nb"}}
	if _, err := RenderSystemd(lin); err == nil {
		t.Errorf("a line feed reaches a systemd unit line")
	}
}

// Issue 26, item 6: %H in ExecStart= is written out as the name of the
// host the unit is read on; read elsewhere it stays a blocker.
func TestRoundTripHostnameInExecStartIsWrittenOutOnTheHost(t *testing.T) {
	unit := "[Service]\nExecStart=/opt/fluent-bit/bin/fluent-bit -c /etc/fluent-bit/fluent-bit.conf --hostname %H --pct 100%%\n"
	c := roundTripCase{name: "fluent-bit", path: "/lib/systemd/system/fluent-bit.service", data: []byte(unit)}
	p, out := checkRoundTrip(t, c)
	if out == nil {
		t.Fatalf("not complete: %s", p.Reason)
	}
	if want := []string{"-c", "/etc/fluent-bit/fluent-bit.conf", "--hostname", testHostname, "--pct", "100%"}; !reflect.DeepEqual(p.Service.Args, want) {
		t.Errorf("args %q, want %q", p.Service.Args, want)
	}
	off, err := ParseUnit(c.path, "", c.data, nil)
	if err != nil || off.Complete || !strings.Contains(off.Reason, "%H") {
		t.Errorf("read off the host, %%H is not a blocker: %v %v %s", err, off.Complete, off.Reason)
	}
	odd, _ := ParseUnitOn("bad host", c.path, "", c.data, nil)
	if odd.Complete {
		t.Errorf("a host name that needs quoting is written out")
	}
}

// Issue 26, item 7: an instance whose name holds a systemd escape adopts,
// its specifiers written out; a malformed escape stays refused.
func TestRoundTripInstanceWithASystemdEscape(t *testing.T) {
	tmpl := "[Unit]\nDescription=File System Check on %f\n\n[Service]\nType=oneshot\nExecStart=/usr/sbin/fsck %f\n"
	c := roundTripCase{name: "escaped instance", path: "/lib/systemd/system/fsck@.service", unit: `fsck@dev-mapper-vg\x2droot.service`, data: []byte(tmpl)}
	p, out := checkRoundTrip(t, c)
	if out == nil {
		t.Fatalf("not complete: %s", p.Reason)
	}
	if p.Service.Unit != `fsck@dev-mapper-vg\x2droot.service` || !reflect.DeepEqual(p.Service.Args, []string{"/dev/mapper/vg-root"}) {
		t.Errorf("declaration %+v", p.Service)
	}
	if !declaration.ValidServiceName(p.Service.Name) {
		t.Errorf("name %q", p.Service.Name)
	}
	for _, unit := range []string{`fsck@dev\x2.service`, `fsck@dev\q2d.service`, `fsck@dev\.service`} {
		s := p.Service
		s.Unit = unit
		if _, err := RenderSystemd(s); err == nil {
			t.Errorf("%s renders", unit)
		}
	}
}

// A notify service with a watchdog adopts into type and watchdog_sec (not
// kept verbatim) and renders back to the same Type= and WatchdogSec=; a
// drop-in's WatchdogSec= wins over the unit's, as systemd reads it.
func TestRoundTripKeepsANotifyServicesWatchdog(t *testing.T) {
	unit := "[Service]\nType=notify\nExecStart=/usr/local/bin/stado host run\nWatchdogSec=2min\nRestart=always\n"
	for _, c := range []struct {
		rc   roundTripCase
		want string
	}{
		{roundTripCase{name: "unit", path: "/etc/systemd/system/stado.service", data: []byte(unit)}, "2min"},
		{roundTripCase{name: "drop-in", path: "/etc/systemd/system/stado.service", data: []byte(unit),
			dropins: []DropIn{{Path: "/etc/systemd/system/stado.service.d/watchdog.conf", Content: "[Service]\nWatchdogSec=4s\n"}}}, "4s"},
	} {
		p, out := checkRoundTrip(t, c.rc)
		if out == nil {
			t.Fatalf("%s: not complete: %s", c.rc.name, p.Reason)
		}
		if p.Service.Type != "notify" || p.Service.WatchdogSec != c.want || len(p.Service.SystemdKeys) != 0 {
			t.Errorf("%s: type %q watchdog_sec %q kept %v, want notify, %s and nothing kept", c.rc.name, p.Service.Type, p.Service.WatchdogSec, p.Service.SystemdKeys, c.want)
		}
		if !strings.Contains(string(out), "\nWatchdogSec="+c.want+"\n") {
			t.Errorf("%s: rendering lacks WatchdogSec=%s:\n%s", c.rc.name, c.want, out)
		}
	}
}
