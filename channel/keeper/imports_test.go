package keeper

import (
	"os/exec"
	"strings"
	"testing"
)

// The keeper sits beside the pool, not inside it: the SSH client reaches it
// only through sshclient.Transport and never imports it, nor does channel,
// and the keeper reaches down to the SSH client, channel and registry only.
// None links package testing, so no production branch can ask whether it
// runs under go test.
func TestTheKeeperAndTheChannelImportOnlyDownward(t *testing.T) {
	forbidden := map[string][]string{
		"github.com/wisent/stado/channel":           {"github.com/wisent/stado/channel/keeper", "testing"},
		"github.com/wisent/stado/channel/sshclient": {"github.com/wisent/stado/channel/keeper", "testing"},
		"github.com/wisent/stado/channel/keeper":    {"github.com/wisent/stado/cli", "github.com/wisent/stado/fleet", "github.com/wisent/stado/repair", "github.com/wisent/stado/beacon", "github.com/wisent/stado/channel/local", "testing"},
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
			if deps[b] {
				t.Errorf("%s depends on %s", pkg, b)
			}
		}
	}
}
