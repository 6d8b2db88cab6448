package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/units"
)

func runStado(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := NewEnv(strings.NewReader(""), &out, &errb)
	home := t.TempDir()
	env.Getenv = func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	}
	code := Run(context.Background(), env, append([]string{"stado"}, args...))
	return code, out.String(), errb.String()
}

const hostUnitFleet = `version: 1
targets:
  - name: h1
    ssh: {address: 127.0.1.1}
    os: linux
    services:
      - name: brama
        unit: brama.service
        program: /usr/local/bin/brama
        args: [serve, "two words", "100%"]
        product: brama
      - name: legacy
        unit: legacy.service
        unit_path: /etc/systemd/system/legacy.service
  - name: m1
    ssh: {address: 127.0.1.2}
    os: darwin
    launchd_domain: gui/501
    services:
      - name: brama
        unit: com.wisent.brama
        program: /usr/local/bin/brama
        args: [serve]
        scope: user
`

func writeFleet(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(p, []byte(hostUnitFleet), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestHostUnitRenderPrintsWhatEnsureWouldWrite(t *testing.T) {
	fleet := writeFleet(t)
	code, out, errOut := runStado(t, "host", "unit", "render", "brama", "--registry", fleet, "--host", "h1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want, err := units.RenderSystemd(registry.Service{Name: "brama", Unit: "brama.service", Program: "/usr/local/bin/brama", Args: []string{"serve", "two words", "100%"}, Product: "brama"})
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Errorf("render printed\n%s\nwant\n%s", out, want)
	}
	// The darwin target renders a plist; the OS comes from the target.
	code, out, _ = runStado(t, "host", "unit", "render", "brama", "--registry", fleet, "--host", "m1")
	if code != 0 || !strings.Contains(out, "<key>Label</key>") || !strings.Contains(out, "/.stado/logs/com.wisent.brama.log") {
		t.Errorf("darwin render exit %d:\n%s", code, out)
	}
}

func TestHostUnitRenderRefusals(t *testing.T) {
	fleet := writeFleet(t)
	cases := []struct {
		name string
		args []string
		exit int
		code string
	}{
		// A service declared on two targets needs --host.
		{"ambiguous", []string{"brama", "--registry", fleet}, ExitRefused, "ambiguous"},
		// Not declared anywhere.
		{"not declared", []string{"nothing", "--registry", fleet}, ExitRefused, "not_found"},
		// Declared without a program.
		{"incomplete", []string{"legacy", "--registry", fleet, "--host", "h1"}, ExitRefused, "declaration_incomplete"},
		// No registry given.
		{"no registry", []string{"brama"}, ExitRefused, "not_found"},
		// An OS stado does not render for.
		{"bad os", []string{"brama", "--registry", fleet, "--host", "h1", "--os", "plan9"}, ExitUsage, "usage"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runStado(t, append([]string{"--json", "host", "unit", "render"}, c.args...)...)
			if code != c.exit || out != "" {
				t.Fatalf("exit %d (want %d), stdout %q", code, c.exit, out)
			}
			var doc struct{ Code string }
			if err := json.Unmarshal([]byte(errOut), &doc); err != nil || doc.Code != c.code {
				t.Errorf("stderr %s, want code %s", errOut, c.code)
			}
		})
	}
}

func TestHostUnitParseReportsCompleteAndIncomplete(t *testing.T) {
	dir := t.TempDir()
	unit := filepath.Join(dir, "app.service")
	if err := os.WriteFile(unit, []byte("[Unit]\nDescription=app\nAfter=network.target\n[Service]\nExecStart=/usr/bin/app --port 80\nRestart=always\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A drop-in in app.service.d is applied without --dropins.
	if err := os.MkdirAll(unit+".d", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(unit+".d", "10-env.conf"), []byte("[Service]\nEnvironment=MODE=prod\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runStado(t, "host", "unit", "parse", unit, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Kind     string
		Complete bool
		Service  registry.Service
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Kind != "stado.host.unit.parse" || !doc.Complete || doc.Service.Program != "/usr/bin/app" || doc.Service.Env["MODE"] != "prod" || doc.Service.UnitPath != unit {
		t.Errorf("parsed %+v", doc)
	}

	sock := filepath.Join(dir, "app.socket")
	if err := os.WriteFile(sock, []byte("[Socket]\nListenStream=127.0.0.1:80\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runStado(t, "host", "unit", "parse", sock)
	if code != 0 || !strings.HasPrefix(out, "# incomplete: 1 blocker(s)") || !strings.Contains(out, "app.socket is a socket unit") || !strings.Contains(out, "incomplete_reason:") {
		t.Errorf("socket parse exit %d:\n%s", code, out)
	}

	bad := filepath.Join(dir, "bad.service")
	if err := os.WriteFile(bad, []byte("[Service]\nnot an assignment\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runStado(t, "host", "unit", "parse", bad)
	if code != ExitRefused || !strings.Contains(errOut, "bad.service:2") {
		t.Errorf("unreadable unit: exit %d, %s", code, errOut)
	}
}

func TestHostUnitLogsRefusesNonPositiveLines(t *testing.T) {
	code, _, _ := runStado(t, "host", "unit", "logs", "x.service", "--lines", "0")
	if code != ExitUsage {
		t.Errorf("exit %d, want %d", code, ExitUsage)
	}
}

// host unit parse --instance reads a template as one of its instances: a
// complete declaration of the instance with its name written out; without
// --instance the template names how to adopt one; --instance on a file that
// is not a template, or an instance that makes no unit name, is a usage
// refusal.
func TestHostUnitParseReadsATemplateAsTheInstanceNamed(t *testing.T) {
	dir := t.TempDir()
	tmpl := filepath.Join(dir, "pg@.service")
	if err := os.WriteFile(tmpl, []byte("[Unit]\nDescription=cluster %I\n[Service]\nExecStart=/usr/bin/pg_ctlcluster --skip-systemctl-redirect %i start\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runStado(t, "host", "unit", "parse", tmpl, "--instance", "15-main", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var p units.Parsed
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	if !p.Complete || p.Service.Unit != "pg@15-main.service" || p.Service.Description != "cluster 15/main" ||
		strings.Join(p.Service.Args, " ") != "--skip-systemctl-redirect 15-main start" {
		t.Errorf("instance: %s", out)
	}
	code, out, _ = runStado(t, "host", "unit", "parse", tmpl)
	if code != 0 || !strings.Contains(out, "is a template") || !strings.Contains(out, "--instance NAME") {
		t.Errorf("bare template: exit %d\n%s", code, out)
	}
	plain := filepath.Join(dir, "plain.service")
	if err := os.WriteFile(plain, []byte("[Service]\nExecStart=/bin/true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{plain, "--instance", "x"}, {tmpl, "--instance", "a/b"}, {tmpl, "--instance", "a b"}} {
		code, _, errOut = runStado(t, append([]string{"host", "unit", "parse"}, args...)...)
		if code != 2 || !strings.Contains(errOut, "--instance") {
			t.Errorf("%q: exit %d, want a usage refusal naming --instance: %s", args, code, errOut)
		}
	}
}
