package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cli parses flags and prints: what a host can read about itself (/proc,
// systemctl, D-Bus) lives in units and channel/local, never here.
func TestCLIHoldsNoHostSideCode(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{`"/proc`, `"systemctl"`, `go-systemd/v22/dbus"`, `godbus/dbus`, `"net/tcp"`} {
			if strings.Contains(string(b), bad) {
				t.Errorf("%s holds %s", f, bad)
			}
		}
	}
}
