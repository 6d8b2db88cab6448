package declaration_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/wisent/stado/declaration"
)

// A declaration's violations name fields of the service itself, never a
// document around it; a violation of the service as a whole has no path.
func TestValidateServiceReportsPathsRelativeToTheService(t *testing.T) {
	valid := func() declaration.Service {
		return declaration.Service{Name: "web", Unit: "web.service", Program: "/usr/bin/web", Args: []string{"--port", "80"}}
	}
	cases := []struct {
		name  string
		goos  string
		edit  func(s *declaration.Service)
		paths []string // nil: valid
	}{
		// A plain declaration breaks no rule on either OS.
		{"valid linux", declaration.OSLinux, func(*declaration.Service) {}, nil},
		{"valid darwin", declaration.OSDarwin, func(s *declaration.Service) { s.Unit = "com.example.web" }, nil},
		// Scalar fields are named as they are written in the document.
		{"missing name", declaration.OSLinux, func(s *declaration.Service) { s.Name = "" }, []string{"name"}},
		{"relative program", declaration.OSLinux, func(s *declaration.Service) { s.Program = "web" }, []string{"program"}},
		// List elements carry their index, map entries their key.
		{"NUL in an argument", declaration.OSLinux, func(s *declaration.Service) { s.Args[1] = "8\x000" }, []string{"args[1]"}},
		{"line break in a pre-start command", declaration.OSLinux, func(s *declaration.Service) { s.ExecStartPre = []string{"/bin/true", "/bin/a\nb"} }, []string{"exec_start_pre[1]"}},
		{"bad env name", declaration.OSLinux, func(s *declaration.Service) { s.Env = map[string]string{"1X": "v"} }, []string{`env["1X"]`}},
		// Secret arguments name arguments that exist, once each.
		{"secret args in range", declaration.OSLinux, func(s *declaration.Service) { s.SecretArgs = []int{1, 0} }, nil},
		{"secret arg past the last", declaration.OSLinux, func(s *declaration.Service) { s.SecretArgs = []int{1, 2} }, []string{"secret_args[1]"}},
		{"negative secret arg", declaration.OSLinux, func(s *declaration.Service) { s.SecretArgs = []int{-1} }, []string{"secret_args[0]"}},
		{"secret arg named twice", declaration.OSLinux, func(s *declaration.Service) { s.SecretArgs = []int{1, 1} }, []string{"secret_args[1]"}},
		{"secret arg without args", declaration.OSLinux, func(s *declaration.Service) { s.Args = nil; s.SecretArgs = []int{0} }, []string{"secret_args[0]"}},
		// A systemd-only setting is refused on darwin at its own field.
		{"systemd setting on darwin", declaration.OSDarwin, func(s *declaration.Service) { s.Unit = "com.example.web"; s.ExecStartPre = []string{"/bin/true"} }, []string{"exec_start_pre"}},
		// watchdog_sec is a systemd time span, and systemd's alone.
		{"watchdog span", declaration.OSLinux, func(s *declaration.Service) { s.Type = "notify"; s.WatchdogSec = "2min" }, nil},
		{"watchdog not a span", declaration.OSLinux, func(s *declaration.Service) { s.WatchdogSec = "two minutes" }, []string{"watchdog_sec"}},
		{"watchdog on darwin", declaration.OSDarwin, func(s *declaration.Service) { s.Unit = "com.example.web"; s.WatchdogSec = "30s" }, []string{"watchdog_sec"}},
		{"watchdog set twice", declaration.OSLinux, func(s *declaration.Service) {
			s.WatchdogSec = "30s"
			s.SystemdKeys = []declaration.UnitKey{{Section: "Service", Key: "WatchdogSec", Value: "1min"}}
		}, []string{"systemd_keys[0].key"}},
		// The command's size is a limit of the service as a whole.
		{"command too large", declaration.OSLinux, func(s *declaration.Service) {
			s.Args = []string{strings.Repeat("a", 100<<10), strings.Repeat("b", 100<<10), strings.Repeat("c", 100<<10)}
		}, []string{""}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := valid()
			c.edit(&s)
			var got []string
			for _, v := range declaration.ValidateService(&s, c.goos) {
				got = append(got, v.Path)
			}
			if !reflect.DeepEqual(got, c.paths) {
				t.Fatalf("paths %q, want %q (violations %v)", got, c.paths, declaration.ValidateService(&s, c.goos))
			}
		})
	}
}

// ValidateService reports the rules first and the size limits after them,
// each half as CheckRules and CheckLimits report it.
func TestValidateServiceIsItsRulesThenItsLimits(t *testing.T) {
	s := declaration.Service{Name: "", Unit: "web.service", Program: "/usr/bin/web", Args: make([]string, declaration.MaxArgs+1)}
	got := declaration.ValidateService(&s, declaration.OSLinux)
	want := append(declaration.CheckRules(&s, declaration.OSLinux), declaration.CheckLimits(&s, declaration.OSLinux)...)
	if len(got) < 2 || !reflect.DeepEqual(got, want) {
		t.Fatalf("ValidateService %v, want rules then limits %v", got, want)
	}
	if got[0].Path != "name" || got[len(got)-1].Path != "args" {
		t.Fatalf("first %q last %q, want name then args", got[0].Path, got[len(got)-1].Path)
	}
}

// TestMaskedHidesSecretArgsAndEnvValues: Masked replaces env values and the
// arguments SecretArgs names, leaves the others, and never changes the
// declaration it was called on (the render reads that one).
func TestMaskedHidesSecretArgsAndEnvValues(t *testing.T) {
	s := declaration.Service{Name: "web", Unit: "web.service", Program: "/usr/bin/web",
		Args: []string{"serve", "--token", "s3cret"}, SecretArgs: []int{2}, Env: map[string]string{"K": "v"}}
	m := s.Masked(false)
	if want := []string{"serve", "--token", declaration.Mask}; !reflect.DeepEqual(m.Args, want) {
		t.Fatalf("masked args %q, want %q", m.Args, want)
	}
	if m.Env["K"] != declaration.Mask {
		t.Fatalf("masked env %v", m.Env)
	}
	if s.Args[2] != "s3cret" || s.Env["K"] != "v" {
		t.Fatalf("Masked changed its receiver: %v %v", s.Args, s.Env)
	}
	if shown := s.Masked(true); !reflect.DeepEqual(shown, s) {
		t.Fatalf("Masked(true) = %+v, want the declaration as it is", shown)
	}
}
