package registry_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/wisent/stado/declaration"
	"github.com/wisent/stado/registry"
)

// What the render, the channel or the host would refuse later is refused
// when the document is validated, naming the field.
func TestRegistryRefusesWhatRenderOrTheHostWouldRefuse(t *testing.T) {
	for _, tc := range []struct {
		name  string
		os    string
		edit  func(s *registry.Service, tg *registry.Target)
		field string // "" means valid
	}{
		// '$': the render would double it and systemd would look for a$$b
		{"dollar in program", "linux", func(s *registry.Service, _ *registry.Target) { s.Program = "/opt/a$b" }, "services[0].program"},
		// a double quote in the program path
		{"quote in program", "linux", func(s *registry.Service, _ *registry.Target) { s.Program = `/opt/a"b` }, "services[0].program"},
		// a backslash in the program path
		{"backslash in program", "linux", func(s *registry.Service, _ *registry.Target) { s.Program = `/opt/a\b` }, "services[0].program"},
		// a TAB in the program path
		{"tab in program", "linux", func(s *registry.Service, _ *registry.Target) { s.Program = "/opt/a\tb" }, "services[0].program"},
		// an ESC in the program path, darwin too
		{"escape in program", "darwin", func(s *registry.Service, _ *registry.Target) { s.Program = "/opt/a\x1bb" }, "services[0].program"},
		// '$' is fine in a launchd program path
		{"dollar on darwin", "darwin", func(s *registry.Service, _ *registry.Target) { s.Program = "/opt/a$b" }, ""},
		// a control character in an argument
		{"control in arg", "linux", func(s *registry.Service, _ *registry.Target) { s.Args = []string{"ok", "a\x01b"} }, "services[0].args[1]"},
		// a line feed in an argument
		{"LF in arg", "linux", func(s *registry.Service, _ *registry.Target) { s.Args = []string{"a\nb"} }, "services[0].args[0]"},
		// a carriage return in an argument
		{"CR in arg", "darwin", func(s *registry.Service, _ *registry.Target) { s.Args = []string{"a\rb"} }, "services[0].args[0]"},
		// a TAB in an argument is carried (quoted)
		{"tab in arg", "linux", func(s *registry.Service, _ *registry.Target) { s.Args = []string{"a\tb"} }, ""},
		// a control character in an env value
		{"control in env", "darwin", func(s *registry.Service, _ *registry.Target) { s.Env = map[string]string{"A": "x\x07"} }, "services[0].env.A"},
		// an argument of 128 KiB
		{"128 KiB argument", "linux", func(s *registry.Service, _ *registry.Target) { s.Args = []string{strings.Repeat("a", 128<<10)} }, "services[0].args[0]"},
		// just under: accepted
		{"argument under the bound", "linux", func(s *registry.Service, _ *registry.Target) {
			s.Args = []string{strings.Repeat("a", declaration.MaxArgBytes)}
		}, ""},
		// arguments that render past the channel's 1 MiB
		{"unit over 1 MiB", "linux", func(s *registry.Service, _ *registry.Target) {
			for i := 0; i < 3; i++ {
				s.Args = append(s.Args, strings.Repeat("a", 100<<10))
			}
		}, "services[0]"},
		// a systemd escape the channel refuses
		{"malformed unit escape", "linux", func(s *registry.Service, _ *registry.Target) { s.Unit = `a\x2.service` }, "services[0].unit"},
		// a unit name ending in a backslash
		{"trailing backslash", "linux", func(s *registry.Service, _ *registry.Target) { s.Unit = `a\`; s.Program = "" }, "services[0].unit"},
		// a slice with a program
		{"slice with a program", "linux", func(s *registry.Service, _ *registry.Target) { s.Unit = "a.slice" }, "services[0].unit"},
		// a target whose beacon key would pass the store's key limit
		{"long target name", "linux", func(_ *registry.Service, tg *registry.Target) {
			tg.Name = strings.Repeat("h", 61) + "." + strings.Repeat("h", 61) + "." + strings.Repeat("h", 40)
		}, "targets[0].name"},
		// a user unit path with a segment the host refuses
		{"user unit path", "linux", func(s *registry.Service, _ *registry.Target) {
			s.Scope, s.UnitPath = "user", "/home/a b/.config/systemd/user/a.service"
		}, "services[0].unit_path"},
		// too many arguments
		{"too many args", "linux", func(s *registry.Service, _ *registry.Target) { s.Args = make([]string, declaration.MaxArgs+1) }, "services[0].args"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := registry.Target{Name: "h", OS: tc.os}
			s := registry.Service{Name: "a", Unit: "a.service", Program: "/opt/a"}
			if tc.os == "darwin" {
				s.Unit = "com.example.a"
			}
			tc.edit(&s, &tg)
			tg.Services = []registry.Service{s}
			err := registry.Validate(&registry.Document{Version: 1, Targets: []registry.Target{tg}})
			if tc.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ve *registry.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("err %v, want a validation error at %s", err, tc.field)
			}
			for _, v := range ve.Violations {
				if strings.HasSuffix(v.Path, tc.field) {
					return
				}
			}
			t.Fatalf("violations %v name no %s", ve.Violations, tc.field)
		})
	}
}

// A document past the size limit is refused before it is parsed, in YAML
// and JSON, when pushed and when read back from the store.
func TestOversizedDocumentsAreRefusedBeforeParsing(t *testing.T) {
	big := registry.MaxDocumentBytes + 1
	for _, tc := range []struct {
		name string
		data string
	}{
		// YAML just past the limit
		{"yaml", "version: 1\n# " + strings.Repeat("x", big)},
		// JSON just past the limit
		{"json", `{"version":1,"x":"` + strings.Repeat("x", big) + `"}`},
		// YAML that would be slow to parse: many small nodes
		{"yaml nodes", "version: 1\ntargets:\n" + strings.Repeat("- {name: h, os: linux}\n", big/22+1)},
		// with a BOM in front
		{"bom", "\xef\xbb\xbf" + "version: 1\n# " + strings.Repeat("x", big)},
		// JSON arrays
		{"json arrays", `{"version":1,"targets":[` + strings.Repeat(`{"name":"h","os":"linux"},`, big/25+1) + `{}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := registry.Parse([]byte(tc.data), "big.yaml")
			var pe *registry.ParseError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), "the limit is") {
				t.Fatalf("err %v, want the size refusal", err)
			}
		})
	}
}

// A fleet-size document is checked target by target on several
// processors, and its violations still come in document order: each
// target's own, its duplicate name, the directory, then the limits.
func TestViolationsOfAFleetSizeDocumentComeInDocumentOrder(t *testing.T) {
	d := &registry.Document{Version: 1}
	for i := 0; i < 300; i++ {
		d.Targets = append(d.Targets, registry.Target{Name: fmt.Sprintf("host%03d", i), OS: registry.OSLinux,
			Services: []registry.Service{{Name: "a", Unit: "a.service", Program: "/bin/a", Args: []string{"x"}}}})
	}
	d.Targets[5].OS = "plan9"
	d.Targets[150].Services[0].Unit = `a\.service`
	d.Targets[151].Name = "host005"
	d.Targets[299].Services[0].Args = []string{"ok", strings.Repeat("x", declaration.MaxArgBytes+1)}
	d.Targets[7].Services[0].Args = []string{"\x1b"}
	err := registry.Validate(d)
	var ve *registry.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("Validate = %v, want a *ValidationError", err)
	}
	var paths []string
	for _, v := range ve.Violations {
		paths = append(paths, v.Path)
	}
	want := []string{
		"targets[5].os",
		"targets[151].name",
		"targets[7].services[0].args[0]",
		"targets[150].services[0].unit",
		"targets[299].services[0].args[1]",
	}
	if fmt.Sprint(paths) != fmt.Sprint(want) {
		t.Errorf("violations at\n%s\nwant\n%s\n(%v)", strings.Join(paths, "\n"), strings.Join(want, "\n"), err)
	}
	// checked on one processor, the violations are the same
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	if one := registry.Validate(d); one.Error() != err.Error() {
		t.Errorf("on one processor:\n%v\non several:\n%v", one, err)
	}
}
