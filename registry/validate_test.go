package registry_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/wisent/stado/declaration"
	"github.com/wisent/stado/registry"
)

// violations parses and validates data and returns every problem found,
// with parse failures reported at the path "(parse)".
func violations(data []byte, source string) ([]registry.Violation, *registry.Document) {
	d, err := registry.Parse(data, source)
	if err == nil {
		err = registry.Validate(d)
	}
	var ve *registry.ValidationError
	var pe *registry.ParseError
	switch {
	case err == nil:
		return nil, d
	case errors.As(err, &ve):
		return ve.Violations, d
	case errors.As(err, &pe):
		msg := pe.Msg
		if pe.Line > 0 {
			msg = "line " + strconv.Itoa(pe.Line) + ": " + msg
		}
		return []registry.Violation{{Path: "(parse)", Message: msg}}, d
	default:
		return []registry.Violation{{Path: "(error)", Message: err.Error()}}, d
	}
}

// Every file in testdata/bad is refused with exactly the violations its
// .want file lists: one "PATH: MESSAGE-SUBSTRING" per line, exact path.
func TestBadDocumentsAreRefusedAtTheirExactFieldPaths(t *testing.T) {
	files, err := filepath.Glob("testdata/bad/*.*")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, ".want") {
			continue
		}
		n++
		name := strings.TrimSuffix(filepath.Base(f), filepath.Ext(f))
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			wantText, err := os.ReadFile(strings.TrimSuffix(f, filepath.Ext(f)) + ".want")
			if err != nil {
				t.Fatalf("%s has no .want file: %v", f, err)
			}
			var wants []registry.Violation
			for _, line := range strings.Split(strings.TrimSpace(string(wantText)), "\n") {
				p, m, ok := strings.Cut(line, ": ")
				if !ok {
					t.Fatalf("bad want line %q", line)
				}
				wants = append(wants, registry.Violation{Path: p, Message: m})
			}
			got, _ := violations(data, f)
			if len(got) != len(wants) {
				t.Fatalf("%d violation(s), want %d:\n got  %v\n want %v", len(got), len(wants), got, wants)
			}
			for _, w := range wants {
				found := false
				for _, g := range got {
					if g.Path == w.Path && strings.Contains(g.Message, w.Message) {
						found = true
					}
				}
				if !found {
					t.Errorf("missing violation %s: ...%s...\n got %v", w.Path, w.Message, got)
				}
			}
		})
	}
	if n < 30 {
		t.Fatalf("only %d bad documents, want at least 30", n)
	}
}

func TestDocumentWithFiveViolationsReportsAllFive(t *testing.T) {
	data, err := os.ReadFile("testdata/bad/five_violations.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d, err := registry.Parse(data, "five")
	if err != nil {
		t.Fatal(err)
	}
	var ve *registry.ValidationError
	if err := registry.Validate(d); !errors.As(err, &ve) || !errors.Is(err, registry.ErrInvalid) {
		t.Fatalf("Validate = %v, want *ValidationError wrapping ErrInvalid", err)
	}
	if len(ve.Violations) != 5 {
		t.Fatalf("%d violations, want 5: %v", len(ve.Violations), ve.Violations)
	}
}

func TestGoodDocumentsAreValidAndRoundTrip(t *testing.T) {
	files, _ := filepath.Glob("testdata/good/*")
	files = append(files, "../examples/fleet.yaml")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if vs, _ := violations(data, f); len(vs) != 0 {
				t.Fatalf("good document refused: %v", vs)
			}
			d, _ := registry.Parse(data, f)
			for _, format := range []string{registry.FormatYAML, registry.FormatJSON} {
				out, err := registry.Marshal(d, format)
				if err != nil {
					t.Fatal(err)
				}
				again, err := registry.Marshal(d, format)
				if err != nil || string(again) != string(out) {
					t.Fatalf("%s rendering is not deterministic", format)
				}
				back, err := registry.Parse(out, format)
				if err != nil {
					t.Fatalf("parse own %s: %v\n%s", format, err, out)
				}
				if registry.DetectFormat(out) != format {
					t.Fatalf("own %s detected as %s", format, registry.DetectFormat(out))
				}
				if !registry.Diff(d, back).Empty() {
					t.Fatalf("%s round trip changed the document: %+v", format, registry.Diff(d, back))
				}
			}
		})
	}
}

func TestIncompleteDeclarationIsValidAndReportedIncomplete(t *testing.T) {
	data, err := os.ReadFile("testdata/good/incomplete.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d, err := registry.Parse(data, "incomplete")
	if err != nil {
		t.Fatal(err)
	}
	if err := registry.Validate(d); err != nil {
		t.Fatal(err)
	}
	legacy, ok := d.Targets[0].Service("legacy")
	if !ok || !legacy.Incomplete() {
		t.Fatalf("legacy: found %v, incomplete %v; want an incomplete declaration", ok, ok && legacy.Incomplete())
	}
	if worker, _ := d.Targets[0].Service("worker"); worker.Incomplete() {
		t.Fatal("worker has a program and is reported incomplete")
	}
}

// The complete example in docs/registry.md is examples/fleet.yaml, byte
// for byte.
func TestDocsExampleIsTheExampleFleet(t *testing.T) {
	doc, err := os.ReadFile("../docs/registry.md")
	if err != nil {
		t.Fatal(err)
	}
	fleet, err := os.ReadFile("../examples/fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "## A complete example")
	_, block, ok2 := strings.Cut(rest, "```yaml\n")
	block, _, ok3 := strings.Cut(block, "```\n")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/registry.md has no yaml block under \"A complete example\"")
	}
	if block != string(fleet) {
		t.Fatal("the example in docs/registry.md differs from examples/fleet.yaml")
	}
}

// A document reports each service's own violations (declaration's, paths
// relative to the service) under the service's path, with the same
// messages; a violation of the service as a whole is at the service's path.
func TestDocumentReportsServiceViolationsUnderTheServicePath(t *testing.T) {
	bad := registry.Service{Name: "web", Unit: "web.service", Program: "/usr/bin/web",
		Args:         []string{"ok", "n\x00ul", strings.Repeat("a", 130<<10), strings.Repeat("b", 130<<10)},
		Env:          map[string]string{"1X": "v"},
		UnitSettings: registry.UnitSettings{ExecStartPre: []string{"/bin/a\nb"}}}
	d := &registry.Document{Version: 1, Targets: []registry.Target{
		{Name: "h1", OS: registry.OSLinux, Services: []registry.Service{{Name: "ok", Unit: "ok.service", Program: "/bin/ok"}}},
		{Name: "h2", OS: registry.OSLinux, Services: []registry.Service{{Name: "ok", Unit: "ok.service", Program: "/bin/ok"}, bad}},
	}}
	var ve *registry.ValidationError
	if err := registry.Validate(d); !errors.As(err, &ve) {
		t.Fatalf("Validate: %v, want a *ValidationError", err)
	}
	var want []registry.Violation
	for _, v := range declaration.ValidateService(&bad, registry.OSLinux) {
		if v.Path == "" {
			v.Path = "targets[1].services[1]"
		} else {
			v.Path = "targets[1].services[1]." + v.Path
		}
		want = append(want, v)
	}
	if len(want) < 4 || !reflect.DeepEqual(ve.Violations, want) {
		t.Fatalf("document violations\n%v\nwant the service's, prefixed\n%v", ve.Violations, want)
	}
}
