package bootstrap

import (
	"os/exec"
	"strings"
	"testing"
)

// bootstrap is handed a Shell: it never links the SSH client (only cli and
// channel/keeper build connections) nor the channel, fleet or cli.
func TestBootstrapLinksNoSSHClient(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/wisent/stado/release/bootstrap").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, d := range strings.Fields(string(out)) {
		for _, bad := range []string{"github.com/wisent/stado/channel", "github.com/wisent/stado/fleet", "github.com/wisent/stado/cli", "golang.org/x/crypto/ssh"} {
			if d == bad || strings.HasPrefix(d, bad+"/") {
				t.Errorf("release/bootstrap depends on %s", d)
			}
		}
	}
}
