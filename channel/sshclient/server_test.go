package sshclient

import (
	"context"
	"io"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/channel/channeltest"
)

// The in-process SSH server and its keys live in channeltest, shared with
// the tests of the packages above channel; these are their short names here.

type testServer = channeltest.Server

func startServer(t testing.TB, hostKeys ...ssh.Signer) *testServer {
	t.Helper()
	return channeltest.StartServer(t, hostKeys...)
}

func newSigner(t testing.TB) ssh.Signer { t.Helper(); return channeltest.NewSigner(t) }

func clientKey(t testing.TB, dir, name string) (string, ssh.PublicKey) {
	t.Helper()
	return channeltest.ClientKey(t, dir, name)
}

func isolatedHome(t *testing.T) string { t.Helper(); return channeltest.IsolatedHome(t) }

func knownHostsWith(t *testing.T, path string, key ssh.PublicKey, addrs ...string) {
	t.Helper()
	channeltest.KnownHostsWith(t, path, key, addrs...)
}

func startAgent(t *testing.T, keys ...agent.AddedKey) string {
	t.Helper()
	return channeltest.StartAgent(t, keys...)
}

// serveChannel makes s run the real remote program against host.
func serveChannel(s *testServer, host channel.Host) {
	s.SetHandler(func(cmd string, stdin io.Reader, stdout, stderr io.Writer) int {
		return channel.Serve(context.Background(), cmd, stdin, stdout, stderr, host)
	})
}
