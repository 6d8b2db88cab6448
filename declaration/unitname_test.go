package declaration_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/wisent/stado/declaration"
	"github.com/wisent/stado/registry"
)

func TestCheckUnitNameAndCheckServiceUnit(t *testing.T) {
	long := strings.Repeat("a", 248) + ".service" // 256 bytes
	cases := []struct {
		os, unit string
		name     string // "" when CheckUnitName accepts it, else part of its error
		service  string // likewise for CheckServiceUnit
	}{
		// A plain service and an instance of a template.
		{registry.OSLinux, "brama.service", "", ""},
		{registry.OSLinux, "worker@blue.service", "", ""},
		// systemd escaping (systemd-escape writes \x2d for '-').
		{registry.OSLinux, `srv-data\x2dold.mount`, "", "is not a service unit"},
		// Units that come with a service: named, never rendered.
		{registry.OSLinux, "brama.socket", "", "is not a service unit"},
		{registry.OSLinux, "rotate.timer", "", "is not a service unit"},
		{registry.OSLinux, "multi-user.target", "", "is not a service unit"},
		{registry.OSLinux, "watch.path", "", "is not a service unit"},
		// The manager's and the kernel's own units are not addressed.
		{registry.OSLinux, "dev-sda.device", "no unit type suffix", "no unit type suffix"},
		{registry.OSLinux, "user.slice", "no unit type suffix", "no unit type suffix"},
		{registry.OSLinux, "brama", "no unit type suffix", "no unit type suffix"},
		{registry.OSLinux, ".service", "is not a systemd unit name", "is not a systemd unit name"},
		{registry.OSLinux, "a..service", "empty name before .service", "empty name before .service"},
		{registry.OSLinux, "brama@.service", "is a template", "is a template"},
		{registry.OSLinux, "-brama.service", "starts with '-'", "starts with '-'"},
		{registry.OSLinux, "@x.service", "is not a systemd unit name", "is not a systemd unit name"},
		{registry.OSLinux, "bra ma.service", "is not a systemd unit name", "is not a systemd unit name"},
		{registry.OSLinux, long, "at most 255", "at most 255"},
		{registry.OSLinux, "", "empty", "empty"},
		// A launchd label is reverse-DNS.
		{registry.OSDarwin, "com.wisent.brama", "", ""},
		{registry.OSDarwin, "com.wisent.brama-grant_sync", "", ""},
		{registry.OSDarwin, "brama", "reverse-DNS", "reverse-DNS"},
		{registry.OSDarwin, "com..brama", "reverse-DNS", "reverse-DNS"},
		{registry.OSDarwin, "com.wisent.-x", "reverse-DNS", "reverse-DNS"},
		{registry.OSDarwin, "com.wisent.a+b", "reverse-DNS", "reverse-DNS"},
		// Apple's jobs may be named, never installed.
		{registry.OSDarwin, "com.apple.sshd", "", "Apple's namespace"},
		// Each OS has its own form.
		{registry.OSDarwin, "brama.service", "", ""}, // two parts: a valid label too
		{registry.OSLinux, "com.wisent.brama", "no unit type suffix", "no unit type suffix"},
		{"windows", "brama.service", "neither linux nor darwin", "neither linux nor darwin"},
	}
	for _, c := range cases {
		for _, check := range []struct {
			fn   func(string, string) error
			want string
			name string
		}{{declaration.CheckUnitName, c.name, "CheckUnitName"}, {declaration.CheckServiceUnit, c.service, "CheckServiceUnit"}} {
			err := check.fn(c.os, c.unit)
			var ne *declaration.NameError
			switch {
			case check.want == "" && err != nil:
				t.Errorf("%s(%s, %q) = %v, want nil", check.name, c.os, c.unit, err)
			case check.want != "" && (err == nil || !strings.Contains(err.Error(), check.want)):
				t.Errorf("%s(%s, %q) = %v, want an error saying %q", check.name, c.os, c.unit, err, check.want)
			case err != nil && (!errors.As(err, &ne) || ne.Name != c.unit):
				t.Errorf("%s(%s, %q) = %#v, want a *NameError naming the unit", check.name, c.os, c.unit, err)
			}
		}
	}
}

func TestUnitDirAndDefaultUnitPath(t *testing.T) {
	cases := []struct {
		os, scope, unit string
		dir, path       string
	}{
		{registry.OSLinux, registry.ScopeSystem, "brama.service", "/etc/systemd/system", "/etc/systemd/system/brama.service"},
		// An empty scope is system scope.
		{registry.OSLinux, "", "brama.service", "/etc/systemd/system", "/etc/systemd/system/brama.service"},
		{registry.OSLinux, registry.ScopeUser, "brama.service", "/home/ola/.config/systemd/user", "/home/ola/.config/systemd/user/brama.service"},
		{registry.OSDarwin, registry.ScopeSystem, "com.wisent.brama", "/Library/LaunchDaemons", "/Library/LaunchDaemons/com.wisent.brama.plist"},
		{registry.OSDarwin, registry.ScopeUser, "com.wisent.brama", "/home/ola/Library/LaunchAgents", "/home/ola/Library/LaunchAgents/com.wisent.brama.plist"},
		{"windows", registry.ScopeSystem, "x", "", ""},
		{registry.OSLinux, "global", "x.service", "", ""},
	}
	for _, c := range cases {
		if got := declaration.UnitDir(c.os, c.scope, "/home/ola"); got != c.dir {
			t.Errorf("UnitDir(%s, %s) = %q, want %q", c.os, c.scope, got, c.dir)
		}
		if got := declaration.DefaultUnitPath(c.os, c.scope, "/home/ola", c.unit); got != c.path {
			t.Errorf("DefaultUnitPath(%s, %s, %s) = %q, want %q", c.os, c.scope, c.unit, got, c.path)
		}
		// What stado installs, it also accepts and reads back with its scope.
		if c.path == "" {
			continue
		}
		if err := declaration.CheckUnitPath(c.os, c.scope, c.unit, c.path); err != nil {
			t.Errorf("CheckUnitPath of the default path %s = %v", c.path, err)
		}
		want := c.scope
		if want == "" {
			want = registry.ScopeSystem
		}
		if got, ok := declaration.ScopeOfUnitPath(c.os, c.path); !ok || got != want {
			t.Errorf("ScopeOfUnitPath(%s, %s) = %q, %v; want %q", c.os, c.path, got, ok, want)
		}
	}
}

func TestScopeOfUnitPathKnowsTheSearchPaths(t *testing.T) {
	cases := []struct {
		os, path, scope string
		ok              bool
	}{
		// Vendor and runtime directories of systemd's search path.
		{registry.OSLinux, "/usr/lib/systemd/system/sshd.service", registry.ScopeSystem, true},
		{registry.OSLinux, "/run/systemd/system/x.service", registry.ScopeSystem, true},
		{registry.OSLinux, "/usr/lib/systemd/user/pipewire.service", registry.ScopeUser, true},
		{registry.OSLinux, "/root/.config/systemd/user/x.service", registry.ScopeUser, true},
		// Global agents at the root are user scope.
		{registry.OSDarwin, "/Library/LaunchAgents/com.x.y.plist", registry.ScopeUser, true},
		{registry.OSDarwin, "/Library/LaunchDaemons/com.x.y.plist", registry.ScopeSystem, true},
		// A directory of the other init system, or none.
		{registry.OSLinux, "/Library/LaunchDaemons/com.x.y.plist", "", false},
		{registry.OSDarwin, "/etc/systemd/system/x.service", "", false},
		{registry.OSLinux, "/tmp/x.service", "", false},
	}
	for _, c := range cases {
		if got, ok := declaration.ScopeOfUnitPath(c.os, c.path); got != c.scope || ok != c.ok {
			t.Errorf("ScopeOfUnitPath(%s, %s) = %q, %v; want %q, %v", c.os, c.path, got, ok, c.scope, c.ok)
		}
	}
}

func TestCheckUnitPathRefusesOtherDirectoriesAndNames(t *testing.T) {
	cases := []struct {
		os, scope, unit, path, want string
	}{
		{registry.OSLinux, registry.ScopeSystem, "a.service", "/usr/lib/systemd/system/a.service", "outside /etc/systemd/system"},
		{registry.OSLinux, registry.ScopeSystem, "a.service", "/root/.config/systemd/user/a.service", "outside /etc/systemd/system"},
		{registry.OSLinux, registry.ScopeUser, "a.service", "/etc/systemd/system/a.service", "outside <home>/.config/systemd/user"},
		{registry.OSLinux, registry.ScopeUser, "a.service", "/.config/systemd/user/a.service", "outside <home>/.config/systemd/user"},
		{registry.OSLinux, registry.ScopeSystem, "a.service", "/etc/systemd/system/b.service", `want "a.service"`},
		{registry.OSDarwin, registry.ScopeUser, "com.x.a", "/Library/LaunchDaemons/com.x.a.plist", "outside <home>/Library/LaunchAgents"},
		{registry.OSDarwin, registry.ScopeSystem, "com.x.a", "/Library/LaunchDaemons/com.x.a", `want "com.x.a.plist"`},
		{"windows", registry.ScopeSystem, "a", "/a", "no unit directory"},
	}
	for _, c := range cases {
		err := declaration.CheckUnitPath(c.os, c.scope, c.unit, c.path)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckUnitPath(%s, %s, %s, %s) = %v, want an error saying %q", c.os, c.scope, c.unit, c.path, err, c.want)
		}
	}
	// Global agents are a place a declaration may name.
	if err := declaration.CheckUnitPath(registry.OSDarwin, registry.ScopeUser, "com.x.a", "/Library/LaunchAgents/com.x.a.plist"); err != nil {
		t.Errorf("global agent: %v", err)
	}
}

func TestCheckEnvNameAndReservedEnvName(t *testing.T) {
	cases := []struct {
		name     string
		ok       bool // CheckEnvName accepts it
		reserved bool
	}{
		{"BRAMA_CONFIG", true, false},
		{"http_proxy", true, false}, // lower case is a real name
		{"_X1", true, false},
		{"1FOO", false, false},
		{"A-B", false, false},
		{"A=B", false, false},
		{"", false, false},
		{strings.Repeat("A", 128), true, false},
		{strings.Repeat("A", 129), false, false},
		{"PATH", true, true},
		{"IFS", true, true},
		{"ENV", true, true},
		{"BASH_ENV", true, true},
		{"SHELLOPTS", true, true},
		{"HOME", true, true},
		{"LD_PRELOAD", true, true},
		{"DYLD_INSERT_LIBRARIES", true, true},
		{"LDAP_URI", true, false}, // LD without the underscore is not the loader's
		{"path", true, false},
	}
	for _, c := range cases {
		if err := declaration.CheckEnvName(c.name); (err == nil) != c.ok {
			t.Errorf("CheckEnvName(%q) = %v, want ok=%v", c.name, err, c.ok)
		}
		if got := declaration.ReservedEnvName(c.name); got != c.reserved {
			t.Errorf("ReservedEnvName(%q) = %v, want %v", c.name, got, c.reserved)
		}
	}
}
