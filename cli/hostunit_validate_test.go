package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// host unit render validates the document first: a declaration the
// registry would refuse is never rendered, and the refusal names the field.
func TestHostUnitRenderRefusesAnInvalidDocumentNamingTheField(t *testing.T) {
	for _, tc := range []struct {
		name, service, field string
	}{
		// '$' in the program path
		{"dollar program", "program: /opt/a$b", "program"},
		// a backslash in the program path
		{"backslash program", `program: '/opt/a\b'`, "program"},
		// a control character in an argument
		{"control in arg", "program: /opt/a\n    args: [\"a\\u0001b\"]", "args[0]"},
		// a line feed in an argument
		{"LF in arg", "program: /opt/a\n    args: [\"a\\nb\"]", "args[0]"},
		// an escape in an environment value
		{"escape in env", "program: /opt/a\n    env: {A: \"\\e[2J\"}", "env.A"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := "version: 1\ntargets:\n- name: h1\n  os: linux\n  services:\n  - name: a\n    unit: a.service\n    " + tc.service + "\n"
			p := filepath.Join(t.TempDir(), "fleet.yaml")
			if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := runStado(t, "host", "unit", "render", "a", "--registry", p, "--host", "h1")
			if code != ExitRefused || out != "" {
				t.Fatalf("exit %d, stdout %q; want exit %d and nothing rendered (stderr %q)", code, out, ExitRefused, errOut)
			}
			if !strings.Contains(errOut, tc.field) {
				t.Errorf("stderr %q does not name %s", errOut, tc.field)
			}
		})
	}
}
