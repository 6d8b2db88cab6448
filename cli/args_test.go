package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestFlagsAfterArgumentsAreParsedAsFlags(t *testing.T) {
	app := NewApp(NewEnv(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}))
	cases := []struct {
		in, want []string
	}{
		// flags after the name move before it, values stay with their flag
		{[]string{"stado", "service", "status", "brama", "--host", "h2", "--json"},
			[]string{"stado", "service", "status", "--host", "h2", "--json", "brama"}},
		// global flags before the command stay where they are
		{[]string{"stado", "--json", "service", "list"},
			[]string{"stado", "--json", "service", "list"}},
		// an inline value is one word
		{[]string{"stado", "service", "status", "x", "--lines=5"},
			[]string{"stado", "service", "status", "--lines=5", "x"}},
		// after -- everything is positional
		{[]string{"stado", "service", "status", "--", "--host"},
			[]string{"stado", "service", "status", "--", "--host"}},
		// an unknown dash word moves with the flags, for urfave to refuse
		{[]string{"stado", "service", "status", "x", "--nope"},
			[]string{"stado", "service", "status", "--nope", "x"}},
	}
	for _, tc := range cases {
		if got := interspersed(app, tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("interspersed(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestStoreFlagAfterTheCommandNameWins(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	e := NewEnv(strings.NewReader(""), &out, &errOut)
	e.Getenv = func(k string) string {
		if k == "HOME" {
			return t.TempDir()
		}
		return ""
	}
	if code := Run(t.Context(), e, []string{"stado", "--store", "file:///nonexistent-first", "registry", "history", "--store", "file://" + dir, "--json"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if e.StoreURL != "file://"+dir {
		t.Fatalf("store %q, want the command's own file://%s", e.StoreURL, dir)
	}
}

func TestStorePasswordNeverAppearsInErrors(t *testing.T) {
	var out, errOut bytes.Buffer
	e := NewEnv(strings.NewReader(""), &out, &errOut)
	code := Run(t.Context(), e, []string{"stado", "service", "list", "--store", "etcd://u:pw-secret-123@127.0.0.1:1/x"})
	if code == 0 {
		t.Fatal("an unreachable etcd was opened")
	}
	if strings.Contains(errOut.String()+out.String(), "pw-secret-123") {
		t.Fatalf("password printed: %s", errOut.String())
	}
}

func TestStoreURLFileNamesTheDefaultStore(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".stado"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".stado", "store-url"), []byte("file://"+dir+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	e := NewEnv(strings.NewReader(""), &out, &errOut)
	e.Getenv = func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	}
	if code := Run(t.Context(), e, []string{"stado", "registry", "history", "--json"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if e.StoreURL != "file://"+dir {
		t.Fatalf("store %q, want the one in store-url", e.StoreURL)
	}
}

// TestVersionFlagPrintsWhatTheVersionCommandPrints: `stado --version` (also
// with --json, before or after it) is `stado version`, never a flag error.
func TestVersionFlagPrintsWhatTheVersionCommandPrints(t *testing.T) {
	run := func(args ...string) (int, string) {
		var out, errOut bytes.Buffer
		code := Run(t.Context(), NewEnv(strings.NewReader(""), &out, &errOut), append([]string{"stado"}, args...))
		return code, out.String() + errOut.String()
	}
	for _, c := range [][2][]string{
		{{"--version"}, {"version"}},
		{{"--version", "--json"}, {"version", "--json"}},
		{{"--json", "--version"}, {"version", "--json"}},
	} {
		code, got := run(c[0]...)
		wantCode, want := run(c[1]...)
		if code != 0 || code != wantCode || got != want || got == "" {
			t.Errorf("stado %v: exit %d %q, want exit %d %q", c[0], code, got, wantCode, want)
		}
	}
}
