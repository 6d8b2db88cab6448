package units

import (
	"reflect"
	"strings"
	"testing"

	"github.com/wisent/stado/declaration"
)

// A template read as one of its instances: every specifier that depends on
// the unit's name or file is written out for the instance, in every kind of
// assignment; host specifiers stay as written where the field keeps text.
func TestTemplateInstanceAdoptsCompleteWithNameSpecifiersWrittenOut(t *testing.T) {
	tmpl := "[Unit]\n" +
		"Description=worker %I of %p (%n, %N, %j/%J, %f)\n" +
		"After=network.target dev-%i.device\n" +
		"\n[Service]\n" +
		"Environment=INSTANCE=%i HOST=%H\n" +
		"ExecStartPre=/bin/mkdir -p /run/%p/%i\n" +
		"ExecStart=/usr/bin/worker --name %i --dir %f --unit %n --pct 100%%\n" +
		"PIDFile=/run/%p/%i.pid\n" +
		"RuntimeDirectory=%p-%i\n" +
		"SyslogIdentifier=%N\n" +
		"ConditionPathExists=%Y/%p.conf\n" +
		"\n[Install]\nWantedBy=multi-user.target\n"
	p, err := ParseUnit("/lib/systemd/system/my-work@.service", "my-work@blue-green.service", []byte(tmpl), nil)
	if err != nil || !p.Complete {
		t.Fatalf("err %v, complete %v: %s", err, p.Complete, p.Reason)
	}
	s := p.Service
	if s.Unit != "my-work@blue-green.service" || s.Name != "my-work@blue-green" || s.UnitPath != "/lib/systemd/system/my-work@blue-green.service" {
		t.Errorf("identity: unit %q name %q path %q", s.Unit, s.Name, s.UnitPath)
	}
	if s.Description != "worker blue/green of my-work (my-work@blue-green.service, my-work@blue-green, work/work, /blue/green)" {
		t.Errorf("description %q", s.Description)
	}
	if want := []string{"--name", "blue-green", "--dir", "/blue/green", "--unit", "my-work@blue-green.service", "--pct", "100%"}; s.Program != "/usr/bin/worker" || !reflect.DeepEqual(s.Args, want) {
		t.Errorf("argv %q %q", s.Program, s.Args)
	}
	if want := []string{"network.target", "dev-blue-green.device"}; !reflect.DeepEqual(s.After, want) {
		t.Errorf("after %q", s.After)
	}
	if s.PIDFile != "/run/my-work/blue-green.pid" || !reflect.DeepEqual(s.ExecStartPre, []string{"/bin/mkdir -p /run/my-work/blue-green"}) {
		t.Errorf("pidfile %q, pre %q", s.PIDFile, s.ExecStartPre)
	}
	kept := map[string]string{}
	for _, k := range s.SystemdKeys {
		kept[k.Key] = k.Value
	}
	// %H depends on the host, not on the unit: kept for systemd to expand,
	// alone on its line; the other word of the line is typed.
	if kept["Environment"] != "HOST=%H" || s.Env["INSTANCE"] != "blue-green" || kept["RuntimeDirectory"] != "my-work-blue-green" ||
		kept["SyslogIdentifier"] != "my-work@blue-green" || kept["ConditionPathExists"] != "/lib/systemd/system/my-work.conf" {
		t.Errorf("kept keys %q", kept)
	}
	out, err := RenderSystemd(withoutPath(s))
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range []string{"%i", "%I", "%p", "%n", "%N", "%f", "%j", "%J", "%Y"} {
		if strings.Contains(string(out), spec) {
			t.Errorf("the rendering still holds %s:\n%s", spec, out)
		}
	}
	back, err := ParseUnit("/etc/systemd/system/my-work@blue-green.service", "", out, nil)
	if err != nil || !back.Complete || !reflect.DeepEqual(Canonical(withoutPath(back.Service), declaration.OSLinux, "/root"), Canonical(withoutPath(s), declaration.OSLinux, "/root")) {
		t.Errorf("the rendering does not parse back to the declaration: %v %s\n%s", err, back.Reason, out)
	}
}

func withoutPath(s declaration.Service) declaration.Service {
	s.UnitPath = ""
	return s
}

// An instance file (foo@bar.service written out as its own file) is read as
// that instance; a template with no instance names the way to adopt one.
func TestInstanceFileAdoptsAsItsInstanceAndABareTemplateSaysHowToAdoptOne(t *testing.T) {
	unit := []byte("[Service]\nExecStart=/usr/bin/tor --instance %i\n")
	p, err := ParseUnitFile("/lib/systemd/system/tor@default.service", unit, nil)
	if err != nil || !p.Complete || !reflect.DeepEqual(p.Service.Args, []string{"--instance", "default"}) {
		t.Fatalf("instance file: %v %v %q %s", err, p.Complete, p.Service.Args, p.Reason)
	}
	p, err = ParseUnitFile("/lib/systemd/system/tor@.service", unit, nil)
	if err != nil || p.Complete {
		t.Fatalf("bare template: %v complete %v", err, p.Complete)
	}
	if b := p.Blockers[0]; b.Key != "unit" || !strings.Contains(b.Fix, "tor@NAME.service") || !strings.Contains(b.Fix, "--instance") {
		t.Errorf("template blocker %+v", b)
	}
	// A unit that is not an instance of the file reads the file as itself.
	p, err = ParseUnit("/lib/systemd/system/tor@.service", "other@x.service", unit, nil)
	if err != nil || p.Complete || p.Service.Unit != "tor@.service" {
		t.Errorf("a unit of another template: %v %v %q", err, p.Complete, p.Service.Unit)
	}
	if _, err := ParseSystemdInstance(unit, "tor@.service", "tor.service", nil); err == nil {
		t.Error("ParseSystemdInstance accepted a unit that is no instance of the template")
	}
}

// An instance whose name would expand to text a unit value must quote
// (here a space, from the escape \x20) is incomplete, the blocker naming
// the assignment and the specifier; one that needs none adopts.
func TestInstanceNeedingQuotingNamesTheSpecifierItCannotWriteOut(t *testing.T) {
	tmpl := []byte("[Unit]\nDescription=%I\n[Service]\nExecStart=/usr/bin/worker %I\n")
	p, err := ParseUnit("/etc/systemd/system/w@.service", `w@a\x20b.service`, tmpl, nil)
	if err != nil || p.Complete {
		t.Fatalf("err %v complete %v", err, p.Complete)
	}
	if len(p.Blockers) != 2 {
		t.Fatalf("blockers %+v, want one per assignment", p.Blockers)
	}
	for _, b := range p.Blockers {
		if !strings.Contains(b.Reason, `%I stands for "a b"`) || b.File != "w@.service" || b.Line == 0 {
			t.Errorf("blocker %+v", b)
		}
	}
	// A malformed escape cannot be unescaped at all.
	p, _ = ParseUnit("/etc/systemd/system/w@.service", `w@a\x2.service`, tmpl, nil)
	if p.Complete || !strings.Contains(p.Reason, "malformed escape") {
		t.Errorf("malformed escape: %s", p.Reason)
	}
}

// The specifier values systemd gives, for instances and plain units.
func TestNameSpecifierValuesFollowSystemd(t *testing.T) {
	cases := []struct {
		unit string
		want map[byte]string
	}{
		// postgresql@15-main: %I turns '-' into '/', %f prefixes '/'.
		{"postgresql@15-main.service", map[byte]string{'n': "postgresql@15-main.service", 'N': "postgresql@15-main", 'p': "postgresql", 'P': "postgresql",
			'i': "15-main", 'I': "15/main", 'j': "postgresql", 'J': "postgresql", 'f': "/15/main"}},
		// a plain unit: %p is %N, %j the part after the last '-'.
		{"foo-bar.service", map[byte]string{'n': "foo-bar.service", 'N': "foo-bar", 'p': "foo-bar", 'P': "foo/bar", 'i': "", 'j': "bar", 'J': "bar", 'f': "/foo/bar"}},
		// an escaped instance.
		{`systemd-fsck@dev-disk-by\x2duuid-1.service`, map[byte]string{'i': `dev-disk-by\x2duuid-1`, 'I': "dev/disk/by-uuid/1", 'f': "/dev/disk/by-uuid/1", 'j': "fsck", 'P': "systemd/fsck"}},
	}
	for _, c := range cases {
		vals := nameSpecifierValues(c.unit, "/etc/systemd/system/x.service")
		for spec, want := range c.want {
			if got := vals[spec]; got.why != "" || got.value != want {
				t.Errorf("%s: %%%c = %q (%s), want %q", c.unit, spec, got.value, got.why, want)
			}
		}
		if vals['y'].value != "/etc/systemd/system/x.service" || vals['Y'].value != "/etc/systemd/system" {
			t.Errorf("%s: %%y %q %%Y %q", c.unit, vals['y'].value, vals['Y'].value)
		}
	}
	if got, bad := expandNameSpecifiers("100%% %i %H %t", nameSpecifierValues("a@b.service", "")); got != "100%% b %H %t" || bad != nil {
		t.Errorf("expand: %q %v", got, bad)
	}
}
