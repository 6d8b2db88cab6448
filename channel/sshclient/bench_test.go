package sshclient

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"
	"time"

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

// benchmarkFanOutSettle is one cold fan-out to n in-process hosts at
// parallel: every host is dialed (a real handshake on this machine's CPU),
// gets a 2 KiB request and answers after its unit settles (settle). It
// reports the whole fan-out in settles: about 1 when no host waits for a
// slot while others settle, n/parallel when they go in waves.
func benchmarkFanOutSettle(b *testing.B, n, parallel int, settle time.Duration) {
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
		s.SetHandler(func(cmd string, stdin io.Reader, stdout, _ io.Writer) int {
			_, _ = io.Copy(io.Discard, stdin)
			time.Sleep(settle)
			io.WriteString(stdout, cmd)
			return 0
		})
		targets = append(targets, s.Target(fmt.Sprintf("h%d", i)))
		lines += knownHostsLine(s)
	}
	writeFile(b, kh, lines)
	request := bytes.Repeat([]byte("x"), 2<<10)
	b.ResetTimer()
	for b.Loop() {
		pool := NewPool(&Dialer{KnownHostsPath: kh, IdentityFiles: []string{id}})
		for _, r := range channel.FanOut(context.Background(), targets, parallel, func(ctx context.Context, h registry.Target) channel.Result {
			_, _, err := pool.Run(ctx, h, []string{"ensure"}, request)
			return channel.Result{Err: err}
		}, nil) {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
		}
		pool.Close()
	}
	b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(settle), "settles/op")
}

// A cold fan-out to 100 hosts whose units settle in 1 s, at each
// --parallel: what DefaultParallel was chosen from (docs/commands.md).
func BenchmarkFanOutSettle(b *testing.B) {
	for _, p := range []int{4, 8, 16, 32, 64, 128} {
		b.Run(fmt.Sprintf("hosts=100/parallel=%d", p), func(b *testing.B) { benchmarkFanOutSettle(b, 100, p, time.Second) })
	}
}
