package sshclient

import (
	"context"
	"fmt"
	"testing"

	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/registry"
)

// benchFleet starts n in-process servers running the real remote program
// and returns their targets and a pool with every connection already open.
func benchFleet(b *testing.B, n int) ([]registry.Target, *Pool) {
	home := b.TempDir()
	b.Setenv("HOME", home)
	b.Setenv("SSH_AUTH_SOCK", "")
	id, pub := clientKey(b, home, "id")
	kh := home + "/known_hosts"
	var targets []registry.Target
	var lines string
	for i := range n {
		s := startServer(b)
		s.Authorize(pub)
		serveChannel(s, &recordingHost{})
		targets = append(targets, s.Target(fmt.Sprintf("h%d", i)))
		lines += knownHostsLine(s)
	}
	writeFile(b, kh, lines)
	pool := NewPool(&Dialer{KnownHostsPath: kh, IdentityFiles: []string{id}})
	b.Cleanup(func() { pool.Close() })
	for _, h := range targets {
		if _, err := pool.Client(context.Background(), h); err != nil {
			b.Fatal(err)
		}
	}
	return targets, pool
}

func benchmarkRestart(b *testing.B, n int) {
	targets, pool := benchFleet(b, n)
	cmd := channel.Command{Verb: channel.VerbUnitRestart, Scope: channel.ScopeSystem, Units: []string{"a.service"}}
	b.ResetTimer()
	for b.Loop() {
		for _, r := range channel.FanOut(context.Background(), targets, 0, func(ctx context.Context, h registry.Target) channel.Result {
			_, err := pool.Call(ctx, h, cmd, nil)
			return channel.Result{Err: err}
		}, nil) {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
		}
	}
}

// One restart call per host over reused connections, on 1 and on 10 hosts.
func BenchmarkRestartOneHost(b *testing.B)  { benchmarkRestart(b, 1) }
func BenchmarkRestartTenHosts(b *testing.B) { benchmarkRestart(b, 10) }

func knownHostsLine(s *testServer) string {
	return knownhosts.Line([]string{knownhosts.Normalize(s.HostPort())}, s.HostSigner.PublicKey()) + "\n"
}
