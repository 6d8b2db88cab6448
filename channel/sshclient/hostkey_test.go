package sshclient

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// countParses counts the known_hosts files parsed while the test runs.
func countParses(t *testing.T) *int {
	n := new(int)
	saved := parseKnownHosts
	parseKnownHosts = func(files ...string) (ssh.HostKeyCallback, error) {
		*n++
		return saved(files...)
	}
	t.Cleanup(func() { parseKnownHosts = saved })
	return n
}

func TestAKnownHostsFileIsParsedOnceWhileItsBytesStandAndEveryEditIsSeenAtTheNextCheck(t *testing.T) {
	parses := countParses(t)
	path := filepath.Join(t.TempDir(), "known_hosts")
	addr := "127.0.0.1:2222"
	remote := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2222}
	a, b := newSigner(t).PublicKey(), newSigner(t).PublicKey()
	write := func(k ssh.PublicKey) {
		t.Helper()
		if err := os.WriteFile(path, []byte(knownhosts.Line([]string{knownhosts.Normalize(addr)}, k)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	checker := &hostKeyChecker{host: "h", path: path}
	check := func(k ssh.PublicKey) error { return checker.check(addr, remote, k) }

	write(a)
	for range 50 {
		if err := check(a); err != nil {
			t.Fatalf("the recorded key: %v", err)
		}
	}
	if *parses != 1 {
		t.Errorf("50 checks against an unchanged file parsed it %d times, want once", *parses)
	}

	// the same file with another key of the same length: the next check sees it
	write(b)
	var he *HostKeyError
	if err := check(a); !errors.As(err, &he) || he.Kind != HostKeyChanged {
		t.Errorf("after the key was replaced: %v, want a changed key", err)
	}
	if err := check(b); err != nil {
		t.Errorf("the new key: %v", err)
	}

	// the host's line removed: unknown at once
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := check(b); !errors.As(err, &he) || he.Kind != HostKeyUnknown {
		t.Errorf("after the line was removed: %v, want an unknown key", err)
	}
	// and the file gone: an empty database, also unknown
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := check(b); !errors.As(err, &he) || he.Kind != HostKeyUnknown {
		t.Errorf("with no file: %v, want an unknown key", err)
	}
}

func TestTheKeptKnownHostsDatabasesAreBounded(t *testing.T) {
	dir := t.TempDir()
	for i := range 3 * maxKeptKnownHosts {
		path := filepath.Join(dir, "known_hosts"+string(rune('a'+i)))
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := loadKnownHosts(path); err != nil {
			t.Fatal(err)
		}
	}
	keptKnownHosts.mu.Lock()
	n := len(keptKnownHosts.by)
	keptKnownHosts.mu.Unlock()
	if n > maxKeptKnownHosts {
		t.Errorf("%d databases kept, the bound is %d", n, maxKeptKnownHosts)
	}
}
