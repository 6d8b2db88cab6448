package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wisent/stado/tests/testbed"
)

// runReleaseCLI runs stado against the file store in dir with vars as the
// whole environment (HOME is dir).
func runReleaseCLI(t *testing.T, dir string, vars map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := NewEnv(strings.NewReader(""), &out, &errb)
	env.Getenv = func(k string) string {
		if k == "HOME" {
			return dir
		}
		return vars[k]
	}
	code := Run(context.Background(), env, append([]string{"stado", "--store", "file://" + dir}, args...))
	return code, out.String(), errb.String()
}

// The four release commands end to end on a file store: a key pair, a
// publish and its unchanged repeat, a declared version (refused until it
// is published, a revision once it is), and a prune that keeps it.
func TestReleaseCommandsPublishDeclareAndPrune(t *testing.T) {
	dir := writeStore(t, fixtureDoc)
	keys := filepath.Join(t.TempDir(), "keys")
	code, out, errOut := runReleaseCLI(t, dir, nil, "release", "key", "generate", "--out", keys, "--json")
	if code != ExitOK || !strings.Contains(out, `"kind": "stado.release.key"`) || !strings.Contains(out, `"encrypted": false`) {
		t.Fatalf("key generate: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runReleaseCLI(t, dir, nil, "release", "key", "generate", "--out", keys); code != ExitRefused || !strings.Contains(errOut, "never overwrites") {
		t.Fatalf("second key generate: exit %d, %s", code, errOut)
	}
	file := filepath.Join(t.TempDir(), "brama")
	if err := os.WriteFile(file, bytes.Repeat([]byte("brama"), 300_000), 0o755); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(keys, "stado-release.key")
	if code, _, errOut := runReleaseCLI(t, dir, nil, "release", "version", "set", "brama", "1.4.3", "--reason", "ship"); code != ExitRefused || !strings.Contains(errOut, "not published") {
		t.Fatalf("declaring an unpublished version: exit %d, %s", code, errOut)
	}
	publish := []string{"release", "publish", "brama", "1.4.3", file, "--os", "linux", "--arch", "amd64", "--key", key}
	code, out, errOut = runReleaseCLI(t, dir, nil, publish...)
	if code != ExitOK || !strings.Contains(out, "chunks    3: 3 written, 0 reused") {
		t.Fatalf("publish: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = runReleaseCLI(t, dir, nil, publish...)
	if code != ExitOK || !strings.Contains(out, "unchanged") || !strings.Contains(out, "0 written, 3 reused") {
		t.Fatalf("publish again: exit %d\n%s", code, out)
	}
	if code, _, errOut := runReleaseCLI(t, dir, nil, "release", "version", "set", "brama", "1.4.3"); code != ExitUsage || !strings.Contains(errOut, "--reason") {
		t.Fatalf("no --reason: exit %d, %s", code, errOut)
	}
	code, out, errOut = runReleaseCLI(t, dir, nil, "release", "version", "set", "brama", "1.4.3", "--host", "host1", "--pin", "--reason", "ship", "--json")
	if code != ExitOK || !strings.Contains(out, `"kind": "stado.release.version.set"`) || !strings.Contains(out, `"pin": true`) {
		t.Fatalf("version set: exit %d\n%s%s", code, out, errOut)
	}
	if _, out, _ := runReleaseCLI(t, dir, nil, "registry", "history"); !strings.Contains(out, "ship") {
		t.Fatalf("the declared version is no revision of the history:\n%s", out)
	}
	code, out, errOut = runReleaseCLI(t, dir, nil, "release", "prune", "--keep", "1", "--dry-run")
	if code != ExitOK || !strings.Contains(out, "kept brama 1.4.3 linux/amd64 (newest)") || !strings.Contains(out, "0 manifest(s) to delete, 1 kept") {
		t.Fatalf("prune: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, _ := runReleaseCLI(t, dir, nil, "release", "prune", "--keep", "0"); code != ExitUsage {
		t.Fatalf("prune --keep 0: exit %d, want usage", code)
	}
}

// The password comes from the environment only, and shows in no output.
func TestReleaseKeyPasswordComesFromTheEnvironmentAndIsNeverPrinted(t *testing.T) {
	if testing.Short() {
		testbed.Unavailable(t, "-short: an encrypted minisign key takes 1 GiB of memory to write")
	}
	dir := t.TempDir()
	secret := "hunter2-release"
	code, out, errOut := runReleaseCLI(t, dir, map[string]string{"STADO_RELEASE_KEY_PASSWORD": secret}, "release", "key", "generate", "--out", dir, "--json")
	if code != ExitOK || !strings.Contains(out, `"encrypted": true`) || strings.Contains(out+errOut, secret) {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
}
