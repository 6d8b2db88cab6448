package sshclient_test

import (
	"os/exec"
	"strings"
	"testing"
)

const (
	module    = "github.com/wisent/stado/"
	sshClient = module + "channel/sshclient"
	sshLib    = "golang.org/x/crypto/ssh"
)

// goList runs `go list` with format over pkgs and returns its output lines.
func goList(t *testing.T, format string, pkgs ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-f", format}, pkgs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(pkgs, " "), err, out)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// The protocol and the packages that act through a channel.Connector or a
// channel.Host they are handed never link the SSH client nor an SSH
// library: channel itself, the write half, the autonomy cycle, the desktop
// page, the read half, the resolver, repair and this machine's own end.
func TestOnlyConnectionBuildersLinkTheSSHClient(t *testing.T) {
	pkgs := []string{"channel", "channel/local", "fleet", "desktop", "autonomy", "beacon", "resolver", "repair"}
	for i, p := range pkgs {
		pkgs[i] = module + p
	}
	for _, line := range goList(t, `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, pkgs...) {
		fields := strings.Fields(line)
		for _, dep := range fields[1:] {
			if dep == sshClient || dep == sshLib || strings.HasPrefix(dep, sshLib+"/") {
				t.Errorf("%s depends on %s", fields[0], dep)
			}
		}
	}
}

// The SSH client is imported only where connections are built: cli (each
// command's connector, and the host process's peers), the keeper (which
// holds connections between commands) and, below cmd/stado, nothing else.
// Tests may import it; this reads production imports only.
func TestOnlyCLIAndTheKeeperImportTheSSHClient(t *testing.T) {
	allowed := map[string]bool{module + "cli": true, module + "channel/keeper": true}
	for _, line := range goList(t, `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"...") {
		fields := strings.Fields(line)
		for _, imp := range fields[1:] {
			if imp == sshClient && !allowed[fields[0]] {
				t.Errorf("%s imports %s: it should act through a channel.Connector it is handed", fields[0], sshClient)
			}
		}
	}
}
