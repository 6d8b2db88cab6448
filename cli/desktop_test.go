package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestDesktopRefusesToListenOutsideLoopback(t *testing.T) {
	dir, now := readFleet(t)
	for _, addr := range []string{"0.0.0.0:7480", "192.168.1.5:7480", ":7480"} {
		code, out, errOut := runReadCLI(t, dir, now, "desktop", "--listen", addr, "--json")
		if code == 0 || out != "" {
			t.Errorf("desktop --listen %s: exit %d, stdout %q", addr, code, out)
		}
		var doc struct{ Code string }
		if err := json.Unmarshal([]byte(errOut), &doc); err != nil || doc.Code != "usage" || !strings.Contains(errOut, "loopback") {
			t.Errorf("desktop --listen %s: %s, want a usage refusal naming loopback", addr, errOut)
		}
	}
}

func TestDesktopRefusesAStoreWithoutARegistryBeforePrintingItsAddress(t *testing.T) {
	code, out, errOut := runReadCLI(t, t.TempDir(), time.Now(), "desktop", "--listen", "127.0.0.1:0")
	if code == 0 || strings.Contains(out, "token=") || !strings.Contains(errOut, "registry") {
		t.Errorf("desktop on an empty store: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
}
