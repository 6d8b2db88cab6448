package tests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/release"
	"github.com/wisent/stado/tests/testbed"
)

// The bootstrap journey: host3 of the shared bed made bare (sshd only, no
// stado, no /var/lib/stado), then bootstrapped over plain SSH into a stado
// host whose beacon the read half lists, idempotently, with the operator's
// channel key restricted to the channel. This file holds the journey's
// fleet and checks; bootstrap_release_journey_test.go runs it through the
// CLI on a stado image published to the store.

// bootstrapFleet declares host3's stado as a bootstrap installs it.
const bootstrapFleet = `version: 1
targets:
  - name: %[1]s
    ssh: {address: %[2]s, port: 22, user: root}
    os: linux
    services:
      - name: stado
        unit: stado.service
        program: /var/lib/stado/release/current/stado
        args: [host, run]
        env: {STADO_STORE: "%[3]s", STADO_HOST: %[1]s}
        product: stado
`

// bootstrapBed makes h bare for t, pushes a registry declaring h's stado,
// and undoes what a bootstrap leaves outside /var/lib/stado and the unit
// (WithoutStado clears those): root's authorized_keys and store-url.
func bootstrapBed(t *testing.T, bed *testbed.Bed, h testbed.Host, c *cli, storeURL string) {
	t.Helper()
	bed.WithoutStado(t, h)
	keys, err := bed.ReadFile(h, "/root/.ssh/authorized_keys")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := bed.WriteFile(h, "/root/.ssh/authorized_keys", keys, 0o600); err != nil {
			t.Errorf("restore %s authorized_keys: %v", h.Name, err)
		}
		bed.Exec(context.Background(), h, "rm", "-f", "/root/.stado/store-url")
	})
	if _, _, err := bed.SSH(journeyCtx(t), h, "test", "-e", "/usr/local/bin/stado"); err == nil {
		t.Fatalf("%s is not bare: /usr/local/bin/stado exists", h.Name)
	}
	fleet := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(fleet, []byte(fmt.Sprintf(bootstrapFleet, h.Name, h.Addr, storeURL)), 0o644); err != nil {
		t.Fatal(err)
	}
	c.mustRun(t, "registry", "push", fleet, "--reason", "bootstrap journey")
}

// channelKey makes an ed25519 key pair for the operator's channel access
// and returns the private key file (the public one is FILE.pub).
func channelKey(t *testing.T) string {
	t.Helper()
	key := filepath.Join(t.TempDir(), "operator")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "operator@bootstrap-journey", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	return key
}

// checkBootstrapped asserts what a bootstrap of h leaves: its beacon in
// `service list`, stado.service active on the image the current link
// names, and /usr/local/bin/stado following that link.
func checkBootstrapped(t *testing.T, bed *testbed.Bed, h testbed.Host, c *cli, sha string) {
	t.Helper()
	ctx := journeyCtx(t)
	eventually(t, 60*time.Second, h.Name+"'s beacon in service list", func() (bool, string) {
		for _, s := range c.list(t).Services {
			if s.Host == h.Name && s.Service == "stado" {
				return s.Beacon.Present && !s.Beacon.Stale && s.State == "active" && s.PID > 0, fmt.Sprintf("%+v", s)
			}
		}
		return false, "no stado row for " + h.Name
	})
	out, _, err := bed.SSH(ctx, h, "systemctl", "show", "-p", "MainPID", "--value", "stado.service")
	if err != nil {
		t.Fatal(err)
	}
	exe, _, err := bed.SSH(ctx, h, "readlink", "/proc/"+strings.TrimSpace(out)+"/exe")
	if err != nil {
		t.Fatal(err)
	}
	if want := release.ImagePath(release.SystemRoot, sha, "stado"); strings.TrimSpace(exe) != want {
		t.Errorf("stado.service runs %q, want the image %s", strings.TrimSpace(exe), want)
	}
	link, _, err := bed.SSH(ctx, h, "readlink", "/usr/local/bin/stado")
	if err != nil || strings.TrimSpace(link) != release.CurrentLink(release.SystemRoot, "stado") {
		t.Errorf("/usr/local/bin/stado -> %q (%v), want the current link", link, err)
	}
}

// checkChannelOnly logs in with the restricted key: anything but a channel
// verb is refused with the channel's exit 3 and runs nothing; a verb runs.
func checkChannelOnly(t *testing.T, bed *testbed.Bed, h testbed.Host, key string) {
	t.Helper()
	ctx := journeyCtx(t)
	ssh := func(argv ...string) (int, string) {
		args := append([]string{"-F", "/dev/null", "-i", key, "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
			"-o", "UserKnownHostsFile=" + bed.KnownHosts(), "-o", "StrictHostKeyChecking=yes", "-o", "GlobalKnownHostsFile=/dev/null",
			"root@" + h.Addr}, argv...)
		cmd := exec.CommandContext(ctx, "ssh", args...)
		out, err := cmd.Output()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode(), string(out)
		}
		if err != nil {
			t.Fatalf("ssh %v: %v", argv, err)
		}
		return 0, string(out)
	}
	code, out := ssh("cat", "/etc/hostname")
	if code != 3 || strings.TrimSpace(out) == h.Name || !strings.Contains(out, `"kind"`) {
		t.Errorf("the restricted key ran `cat /etc/hostname`: exit %d, stdout %q; want the channel's refusal (exit 3)", code, out)
	}
	code, out = ssh("touch", "/tmp/bootstrap-escaped")
	if code != 3 {
		t.Errorf("the restricted key ran touch: exit %d, stdout %q", code, out)
	}
	if _, _, err := bed.SSH(ctx, h, "test", "-e", "/tmp/bootstrap-escaped"); err == nil {
		t.Error("the restricted key created /tmp/bootstrap-escaped")
	}
	code, out = ssh("/usr/local/bin/stado", "host", "channel", "version")
	if code != 0 || !strings.Contains(out, `"version"`) {
		t.Errorf("the restricted key cannot run the channel's version verb: exit %d, stdout %q", code, out)
	}
}
