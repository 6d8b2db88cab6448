package keeper

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/channel/channeltest"
	"github.com/wisent/stado/channel/sshclient"
	"github.com/wisent/stado/units"
)

// fixture is one server, one authorised identity file and a known_hosts
// recording the server's key, under an isolated $HOME.
type fixture struct {
	home       string
	srv        *channeltest.Server
	identity   string
	knownHosts string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	home := channeltest.IsolatedHome(t)
	srv := channeltest.StartServer(t)
	id, pub := channeltest.ClientKey(t, home, "id_test")
	srv.Authorize(pub)
	kh := filepath.Join(home, ".ssh", "known_hosts")
	channeltest.KnownHostsWith(t, kh, srv.HostSigner.PublicKey(), srv.HostPort())
	return &fixture{home: home, srv: srv, identity: id, knownHosts: kh}
}

func (f *fixture) dialer() *sshclient.Dialer {
	return &sshclient.Dialer{KnownHostsPath: f.knownHosts, IdentityFiles: []string{f.identity}, ConnectTimeout: 5 * time.Second}
}

// remoteErr asserts err is a *channel.RemoteError at stage naming host.
func remoteErr(t *testing.T, err error, host string, stage channel.Stage) *channel.RemoteError {
	t.Helper()
	var re *channel.RemoteError
	if !errors.As(err, &re) {
		t.Fatalf("error %v (%T) is not a *channel.RemoteError", err, err)
	}
	if re.Stage != stage || re.Host != host {
		t.Fatalf("failure at %s on %q, want %s on %q: %v", re.Stage, re.Host, stage, host, err)
	}
	if !strings.HasPrefix(re.Error(), host+": ") {
		t.Fatalf("message %q does not name the host first", re.Error())
	}
	return re
}

func writeFile(t testing.TB, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// restartingHost is a Linux host behind the real remote program that
// answers unit restarts and counts them; any other verb that reaches it
// panics (the embedded nil Host).
type restartingHost struct {
	channel.Host
	restarts atomic.Int32
}

func (h *restartingHost) OS() string { return "linux" }

func (h *restartingHost) UnitRestart(_ context.Context, u channel.UnitRef) (units.Verdict, error) {
	h.restarts.Add(1)
	return units.Verdict{Unit: u.Unit, State: units.StateActive, PID: 42}, nil
}
