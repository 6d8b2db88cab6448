package fleet_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The dependency arrows run one way: cli → fleet → channel → units →
// registry. The write half and the channel never reach up into the CLI,
// the recovery code or the read half, and the host's own end of the
// channel knows nothing of the write half.
func TestPackagesImportOnlyDownward(t *testing.T) {
	forbidden := map[string][]string{
		"github.com/wisent/stado/fleet":         {"cli", "repair", "beacon", "resolver"},
		"github.com/wisent/stado/channel":       {"cli", "fleet", "repair", "beacon", "channel/local"},
		"github.com/wisent/stado/channel/local": {"cli", "fleet", "repair", "beacon", "resolver"},
		"github.com/wisent/stado/units":         {"cli", "fleet", "channel", "repair", "beacon"},
	}
	for pkg, bad := range forbidden {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		deps := map[string]bool{}
		for _, d := range strings.Fields(string(out)) {
			deps[d] = true
		}
		for _, b := range bad {
			if deps["github.com/wisent/stado/"+b] {
				t.Errorf("%s depends on %s", pkg, b)
			}
		}
	}
}
