package cli

import (
	"strings"
	"testing"
)

// Every host command rides the one host channel its flags describe
// (connectorFrom), and `stado host run` its peers' (sshConnector, which
// connectorFrom builds on): no command builds an SSH pool or client of its
// own for repair steps, logs or anything else, and cli never acts on a host
// through repair: `repair --apply` hands repair the target's Host.
func TestCLIBuildsOneHostChannelForEveryCommand(t *testing.T) {
	pools := 0
	for f, src := range cliSources(t) {
		if n := strings.Count(src, "sshclient.NewPool("); n > 0 {
			pools += n
			if f != "sshflags.go" {
				t.Errorf("%s builds an SSH pool: host commands take connectorFrom's", f)
			}
		}
		for _, bad := range []string{"sshclient.Client{", "repair.Reach{", "StepRunner{"} {
			if strings.Contains(src, bad) {
				t.Errorf("%s holds %s: hosts are reached through the command's connector", f, bad)
			}
		}
	}
	if pools != 1 {
		t.Errorf("cli builds %d SSH pools, want the one of sshConnector", pools)
	}
}
