// Package channeltest holds helpers for tests that reach hosts through the
// channel: keys, an in-process SSH server with a generated host key, an
// ssh-agent and known_hosts files, made fresh per test.
//
// It imports registry (the Target that reaches its server) and
// x/crypto/ssh, and never channel, so channel's own tests and those of the
// packages above it (channel/keeper, fleet, cli) share one server.
package channeltest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/ssh"
)

// WriteKey writes a fresh unencrypted ed25519 private key in OpenSSH format
// in a temporary directory of t and returns its path.
func WriteKey(t testing.TB) string {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "stado test")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "id_ed25519")
	if err := os.WriteFile(p, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
