package units

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/wisent/stado/declaration"
	"github.com/wisent/stado/tests/testbed"
)

// requireTool returns the path of a tool a test needs, ending the test
// through the testbed gate when it is missing (a failure under
// STADO_TESTBED=required).
func requireTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		testbed.Unavailable(t, "%s is not installed", name)
	}
	return p
}

// plistValues reads a property list with Python's plistlib, a parser
// independent of the one stado encodes with, and returns its values as JSON.
func plistValues(t *testing.T, python, path string) map[string]any {
	t.Helper()
	script := `import json, plistlib, sys
with open(sys.argv[1], "rb") as f:
    print(json.dumps(plistlib.load(f), sort_keys=True, ensure_ascii=False))`
	out, err := exec.Command(python, "-c", script, path).Output()
	if err != nil {
		t.Fatalf("plistlib read %s: %v", path, err)
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("decode plistlib output: %v", err)
	}
	return v
}

// expectedPlistValues is what a rendered plist must hold, built from the
// declaration by hand rather than by the renderer.
func expectedPlistValues(s declaration.Service, home string) map[string]any {
	env := map[string]any{"PATH": PathDarwin}
	for k, v := range s.Env {
		env[k] = v
	}
	argv := []any{s.Program}
	for _, a := range s.Args {
		argv = append(argv, a)
	}
	logPath := home + "/.stado/logs/" + s.Unit + ".log"
	want := map[string]any{
		"EnvironmentVariables": env,
		"KeepAlive":            s.KeepsAlive(),
		"Label":                s.Unit,
		"ProgramArguments":     argv,
		"RunAtLoad":            true,
		"StandardErrorPath":    logPath,
		"StandardOutPath":      logPath,
		"ThrottleInterval":     float64(RestartDelaySeconds),
	}
	if s.Product != "" {
		want["StadoProduct"] = s.Product
	}
	if s.Name != DefaultName(s.Unit, declaration.OSDarwin) {
		want["StadoService"] = s.Name
	}
	return want
}

func TestRenderedPlistsReadBackByIndependentParsers(t *testing.T) {
	python := requireTool(t, "python3")
	plistutil := requireTool(t, "plistutil")
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			s := c.forOS(declaration.OSDarwin)
			home := homeFor(s)
			xmlPath := goldenPath(c, declaration.OSDarwin)
			want := expectedPlistValues(s, home)
			if got := plistValues(t, python, xmlPath); !reflect.DeepEqual(got, want) {
				t.Errorf("plistlib read other values from the XML:\n got %v\nwant %v", got, want)
			}
			// libplist converts stado's XML to binary; plistlib reads that
			// binary, and stado's own parser must read it to the same
			// declaration as the XML.
			bin := filepath.Join(t.TempDir(), "job.plist")
			if out, err := exec.Command(plistutil, "-i", xmlPath, "-o", bin, "-f", "bin").CombinedOutput(); err != nil {
				t.Fatalf("plistutil: %v: %s", err, out)
			}
			if got := plistValues(t, python, bin); !reflect.DeepEqual(got, want) {
				t.Errorf("libplist's binary holds other values:\n got %v\nwant %v", got, want)
			}
			data, err := os.ReadFile(bin)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(data, []byte("bplist")) {
				t.Fatalf("plistutil did not write a binary plist")
			}
			p, err := ParseFile(UnitPath(s, declaration.OSDarwin, home), data, nil)
			if err != nil || !p.Complete {
				t.Fatalf("parse binary: %v %s", err, p.Reason)
			}
			if got, want := Canonical(p.Service, declaration.OSDarwin, home), Canonical(s, declaration.OSDarwin, home); !reflect.DeepEqual(got, want) {
				t.Errorf("binary round trip:\n got %#v\nwant %#v", got, want)
			}
		})
	}
}

func TestRenderedSystemdUnitsPassSystemdAnalyzeVerify(t *testing.T) {
	analyze := requireTool(t, "systemd-analyze")
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			s := c.forOS(declaration.OSLinux)
			// verify checks that the program exists; run an executable this
			// machine has, keeping every argument and variable as declared.
			s.Program = "/bin/echo"
			data, err := RenderSystemd(s)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			path := filepath.Join(dir, s.Unit)
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"verify", "--man=no", path}
			cmd := exec.Command(analyze, args...)
			if s.EffectiveScope() == declaration.ScopeUser {
				rt := filepath.Join(dir, "xdg")
				if err := os.Mkdir(rt, 0o700); err != nil {
					t.Fatal(err)
				}
				cmd = exec.Command(analyze, append([]string{"--user"}, args...)...)
				cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+rt)
			}
			out, err := cmd.CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != "" {
				t.Errorf("systemd-analyze verify %s: %v\n%s\n--- unit\n%s", s.Unit, err, out, data)
			}
		})
	}
}
