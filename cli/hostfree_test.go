package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cliSources returns cli's production files (no tests), by name.
func cliSources(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[f] = string(b)
	}
	return out
}

// cli parses flags and prints: what a host can read about itself (/proc,
// systemctl, D-Bus) lives in units and channel/local, never here.
func TestCLIHoldsNoHostSideCode(t *testing.T) {
	for f, src := range cliSources(t) {
		for _, bad := range []string{`"/proc`, `"systemctl"`, `go-systemd/v22/dbus"`, `godbus/dbus`, `"net/tcp"`} {
			if strings.Contains(src, bad) {
				t.Errorf("%s holds %s", f, bad)
			}
		}
	}
}
