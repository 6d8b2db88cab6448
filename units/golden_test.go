package units

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/wisent/stado/declaration"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// goldenCase is one declaration rendered for both OSes; the unit identity
// differs per OS (a systemd unit name, a launchd label).
type goldenCase struct {
	name       string
	s          declaration.Service
	unitLinux  string
	unitDarwin string
}

func boolp(b bool) *bool { return &b }

// goldenCases are the declarations every golden, round-trip and
// second-parser test runs over.
var goldenCases = []goldenCase{
	// A product declaration in its most ordinary form.
	{name: "plain", unitLinux: "brama.service", unitDarwin: "com.wisent.brama",
		s: declaration.Service{Name: "brama", Program: "/usr/local/bin/brama", Args: []string{"serve", "--port", "8080"}, Product: "brama"}},
	// No arguments at all.
	{name: "no-args", unitLinux: "skarbiec.service", unitDarwin: "com.wisent.skarbiec",
		s: declaration.Service{Name: "skarbiec", Program: "/usr/local/bin/skarbiec"}},
	// Arguments with spaces, leading and trailing ones included.
	{name: "spaces", unitLinux: "spaces.service", unitDarwin: "com.example.spaces",
		s: declaration.Service{Name: "spaces", Program: "/opt/my tools/bin/run", Args: []string{"hello world", "  lead", "trail  ", "a  b"}}},
	// Double and single quotes.
	{name: "quotes", unitLinux: "quotes.service", unitDarwin: "com.example.quotes",
		s: declaration.Service{Name: "quotes", Program: "/bin/echo", Args: []string{`say "hi"`, "it's", `"`, `'`, `"'"`}}},
	// Dollar signs that systemd would otherwise expand.
	{name: "dollar", unitLinux: "dollar.service", unitDarwin: "com.example.dollar",
		s: declaration.Service{Name: "dollar", Program: "/bin/echo", Args: []string{"$HOME", "${USER}", "cost $5", "$$", "$"}}},
	// Percent signs that systemd would otherwise read as specifiers.
	{name: "percent", unitLinux: "percent.service", unitDarwin: "com.example.percent",
		s: declaration.Service{Name: "percent", Program: "/bin/echo", Args: []string{"100%", "%h", "%%", "%n%i"}}},
	// Backslashes, including one at the very end of an argument.
	{name: "backslash", unitLinux: "backslash.service", unitDarwin: "com.example.backslash",
		s: declaration.Service{Name: "backslash", Program: "/bin/echo", Args: []string{`C:\path`, `\n is not a newline`, `end\`, `\\`}}},
	// Unicode in arguments and environment.
	{name: "unicode", unitLinux: "unicode.service", unitDarwin: "com.example.unicode",
		s: declaration.Service{Name: "unicode", Program: "/bin/echo", Args: []string{"żółw", "日本語", "emoji 🚀"}, Env: map[string]string{"GREETING": "cześć"}}},
	// Empty strings as arguments and as an environment value.
	{name: "empty", unitLinux: "empty.service", unitDarwin: "com.example.empty",
		s: declaration.Service{Name: "empty", Program: "/bin/echo", Args: []string{"", "x", ""}, Env: map[string]string{"EMPTY": ""}}},
	// Environment values with every awkward character, and PATH overridden.
	{name: "env", unitLinux: "env.service", unitDarwin: "com.example.env",
		s: declaration.Service{Name: "env", Program: "/usr/bin/env", Env: map[string]string{
			"PATH": "/custom/bin:/usr/bin", "SPACED": "a b  c", "QUOTED": `he said "no"`, "PCT": "50%", "DOLLAR": "$HOME", "BS": `a\b`, "SQ": "it's",
		}}},
	// A user-scope unit (user systemd manager, LaunchAgent).
	{name: "user-scope", unitLinux: "agent.service", unitDarwin: "com.wisent.agent",
		s: declaration.Service{Name: "agent", Program: "/home/op/bin/agent", Args: []string{"--once"}, Scope: declaration.ScopeUser}},
	// keep_alive false: run once at load, never restarted.
	{name: "no-keepalive", unitLinux: "oneshot-ish.service", unitDarwin: "com.example.oneshot-ish",
		s: declaration.Service{Name: "oneshot-ish", Program: "/usr/local/bin/job", KeepAlive: boolp(false)}},
	// A name that differs from the unit identity, with a product.
	{name: "named", unitLinux: "brama-grant-sync.service", unitDarwin: "com.wisent.brama-grant-sync",
		s: declaration.Service{Name: "grant-sync", Program: "/usr/local/bin/brama", Args: []string{"subscription", "sync"}, Product: "brama-grant-sync"}},
	// Semicolons (systemd's command separator) and tabs.
	{name: "semicolon-tab", unitLinux: "semi.service", unitDarwin: "com.example.semi",
		s: declaration.Service{Name: "semi", Program: "/bin/echo", Args: []string{";", "a;b", "tab\there", "\\;"}}},
	// A system unit with an explicit scope and keep_alive true spelled out.
	{name: "explicit-defaults", unitLinux: "explicit.service", unitDarwin: "com.example.explicit",
		s: declaration.Service{Name: "explicit", Program: "/usr/sbin/explicitd", Args: []string{"-f"}, Scope: declaration.ScopeSystem, KeepAlive: boolp(true)}},
}

// forOS returns the case's declaration with its unit identity for goos.
func (c goldenCase) forOS(goos string) declaration.Service {
	s := c.s
	if goos == declaration.OSDarwin {
		s.Unit = c.unitDarwin
	} else {
		s.Unit = c.unitLinux
	}
	return s
}

// homeFor is the home directory the golden files are rendered for.
func homeFor(s declaration.Service) string {
	if s.EffectiveScope() == declaration.ScopeUser {
		return "/Users/operator"
	}
	return "/var/root"
}

func goldenPath(c goldenCase, goos string) string {
	ext := ".service"
	if goos == declaration.OSDarwin {
		ext = ".plist"
	}
	return filepath.Join("testdata", "golden", c.name+ext)
}

var bothOS = []string{declaration.OSLinux, declaration.OSDarwin}

func TestRenderedUnitsMatchGoldenFiles(t *testing.T) {
	if len(goldenCases) < 12 {
		t.Fatalf("only %d golden declarations; the acceptance asks for at least 12", len(goldenCases))
	}
	for _, c := range goldenCases {
		for _, goos := range bothOS {
			t.Run(c.name+"/"+goos, func(t *testing.T) {
				s := c.forOS(goos)
				got, err := Render(s, goos, homeFor(s))
				if err != nil {
					t.Fatalf("render: %v", err)
				}
				again, err := Render(s, goos, homeFor(s))
				if err != nil || !bytes.Equal(got, again) {
					t.Fatalf("rendering twice gave different bytes (err %v)", err)
				}
				path := goldenPath(c, goos)
				if *update {
					if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, got, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("read golden (run with -update to create): %v", err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s differs from the rendering:\n--- golden\n%s\n--- rendered\n%s", path, want, got)
				}
			})
		}
	}
}

func TestEveryGoldenParsesBackToItsDeclaration(t *testing.T) {
	for _, c := range goldenCases {
		for _, goos := range bothOS {
			t.Run(c.name+"/"+goos, func(t *testing.T) {
				s := c.forOS(goos)
				home := homeFor(s)
				data, err := os.ReadFile(goldenPath(c, goos))
				if err != nil {
					t.Fatal(err)
				}
				p, err := ParseFile(UnitPath(s, goos, home), data, nil)
				if err != nil {
					t.Fatalf("parse: %v", err)
				}
				if !p.Complete {
					t.Fatalf("parsed incomplete: %s", p.Reason)
				}
				got, want := Canonical(p.Service, goos, home), Canonical(s, goos, home)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("round trip changed the declaration:\n got %#v\nwant %#v", got, want)
				}
			})
		}
	}
}
