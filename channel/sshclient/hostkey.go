package sshclient

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/safefile"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// HostKeyKind says why a host key was refused.
type HostKeyKind string

const (
	HostKeyUnknown HostKeyKind = "unknown" // no key of the host is recorded
	HostKeyChanged HostKeyKind = "changed" // the host is recorded with another key
	HostKeyRevoked HostKeyKind = "revoked" // the key is marked @revoked
)

// HostKeyError is a host key the client refused. Fingerprint is the
// offered key's SHA256 fingerprint ("SHA256:..."), as ssh-keygen -l prints it.
type HostKeyError struct {
	Host        string      `json:"host"`
	Address     string      `json:"address"`
	KeyType     string      `json:"key_type"`
	Fingerprint string      `json:"fingerprint"`
	Kind        HostKeyKind `json:"kind"`
	KnownHosts  string      `json:"known_hosts"`
}

func (e *HostKeyError) Error() string {
	switch e.Kind {
	case HostKeyUnknown:
		return fmt.Sprintf("host key of %s (%s) is unknown: %s %s is not in %s", e.Host, e.Address, e.KeyType, e.Fingerprint, e.KnownHosts)
	case HostKeyRevoked:
		return fmt.Sprintf("host key of %s (%s) is revoked: %s %s is marked @revoked in %s", e.Host, e.Address, e.KeyType, e.Fingerprint, e.KnownHosts)
	default:
		return fmt.Sprintf("host key of %s (%s) changed: it offers %s %s, and %s records another key for it", e.Host, e.Address, e.KeyType, e.Fingerprint, e.KnownHosts)
	}
}

// RefusalCode is host_key_unknown for an unknown key and host_key_mismatch
// for a changed or revoked one.
func (e *HostKeyError) RefusalCode() refusal.Code {
	if e.Kind == HostKeyUnknown {
		return refusal.HostKeyUnknown
	}
	return refusal.HostKeyMismatch
}

// Hint says how to proceed; a changed key has no flag that overrides it.
func (e *HostKeyError) Hint() string {
	if e.Kind == HostKeyUnknown {
		return "verify the fingerprint out of band, then repeat with --accept-new-host-key to record it"
	}
	return "a changed key is never accepted: verify the host, then remove its old line from " + e.KnownHosts
}

// knownHostsLocks serialises appends to one known_hosts file within the
// process; the sidecar flock serialises them across processes.
var knownHostsLocks sync.Map // path → *sync.Mutex

// probeKey is a key no known_hosts holds; checking it lists the host's keys.
var probeKey = sync.OnceValue(func() ssh.PublicKey {
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		panic(err)
	}
	return k
})

// parseKnownHosts parses known_hosts files (tests count its calls).
var parseKnownHosts = knownhosts.New

// keptKnownHosts keeps, per known_hosts path, the bytes last read there and
// the database parsed from them. A keeper checks a kept connection's key
// before every call, so a command over a hundred hosts would otherwise
// parse the whole file a hundred times. The file is still read at every
// check, and only bytes equal to the kept ones reuse the kept database: an
// edit (a key removed, revoked or replaced) is seen by the next check.
var keptKnownHosts struct {
	mu sync.Mutex
	by map[string]keptDatabase
}

type keptDatabase struct {
	content []byte
	cb      ssh.HostKeyCallback
}

// maxKeptKnownHosts bounds the databases kept: a process reads one or two
// known_hosts files; when more appear, the kept ones are dropped.
const maxKeptKnownHosts = 8

// loadKnownHosts opens path as a known_hosts database; a missing file is an
// empty one.
func loadKnownHosts(path string) (ssh.HostKeyCallback, error) {
	content, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return parseKnownHosts()
	}
	if err != nil {
		return nil, fmt.Errorf("read known_hosts: %w", err)
	}
	keptKnownHosts.mu.Lock()
	k, ok := keptKnownHosts.by[path]
	keptKnownHosts.mu.Unlock()
	if ok && bytes.Equal(k.content, content) {
		return k.cb, nil
	}
	cb, err := parseKnownHosts(path)
	if err != nil {
		return nil, fmt.Errorf("read known_hosts: %w", err)
	}
	// The parse read the file again: keep its database only when the file
	// still holds the bytes read before, which it then parsed.
	if again, err := os.ReadFile(path); err == nil && bytes.Equal(again, content) {
		keptKnownHosts.mu.Lock()
		if keptKnownHosts.by == nil || len(keptKnownHosts.by) >= maxKeptKnownHosts {
			keptKnownHosts.by = map[string]keptDatabase{}
		}
		keptKnownHosts.by[path] = keptDatabase{content: content, cb: cb}
		keptKnownHosts.mu.Unlock()
	}
	return cb, nil
}

// knownAlgorithms returns the host-key algorithms of the keys path records
// for addr, so the handshake asks for a key the client can check (a server
// offering ECDSA first would otherwise look like a changed ed25519 key).
// Nil means the host is unknown.
func knownAlgorithms(path, addr string, remote net.Addr) ([]string, error) {
	cb, err := loadKnownHosts(path)
	if err != nil {
		return nil, err
	}
	var ke *knownhosts.KeyError
	if err := cb(addr, remote, probeKey()); !errors.As(err, &ke) {
		return nil, nil
	}
	var algos []string
	seen := map[string]bool{}
	for _, k := range ke.Want {
		for _, a := range algorithmsFor(k.Key.Type()) {
			if !seen[a] {
				seen[a] = true
				algos = append(algos, a)
			}
		}
	}
	return algos, nil
}

func algorithmsFor(keyType string) []string {
	if keyType == ssh.KeyAlgoRSA {
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
	}
	return []string{keyType}
}

// hostKeyChecker checks one connection's host key against known_hosts and,
// with acceptNew, records an unknown one. It remembers what happened so the
// dialer can name the failing stage without matching error strings.
type hostKeyChecker struct {
	host, path string
	acceptNew  bool

	checked bool  // the callback ran and accepted the key
	refused error // the *HostKeyError or read error it returned
}

func (c *hostKeyChecker) callback(addr string, remote net.Addr, key ssh.PublicKey) error {
	err := c.check(addr, remote, key)
	if err != nil {
		c.refused = err
		return err
	}
	c.checked = true
	return nil
}

func (c *hostKeyChecker) check(addr string, remote net.Addr, key ssh.PublicKey) error {
	cb, err := loadKnownHosts(c.path)
	if err != nil {
		return err
	}
	err = cb(addr, remote, key)
	if err == nil {
		return nil
	}
	he := &HostKeyError{Host: c.host, Address: addr, KeyType: key.Type(), Fingerprint: ssh.FingerprintSHA256(key), KnownHosts: c.path}
	var ke *knownhosts.KeyError
	var re *knownhosts.RevokedError
	switch {
	case errors.As(err, &re):
		he.Kind = HostKeyRevoked
		return he
	case errors.As(err, &ke) && len(ke.Want) > 0:
		he.Kind = HostKeyChanged
		return he
	case errors.As(err, &ke):
		he.Kind = HostKeyUnknown
		if !c.acceptNew {
			return he
		}
		return c.record(addr, remote, key)
	default:
		return fmt.Errorf("check host key of %s: %w", c.host, err)
	}
}

// record appends key for addr (and the remote IP when it differs) to
// known_hosts as a plain line, replacing the whole file atomically under a
// sidecar lock. The file is read again under the lock, so a key another
// process recorded meanwhile is honoured (and a different one refused).
func (c *hostKeyChecker) record(addr string, remote net.Addr, key ssh.PublicKey) error {
	mu, _ := knownHostsLocks.LoadOrStore(c.path, new(sync.Mutex))
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	if err := os.MkdirAll(filepath.Dir(c.path), 0o700); err != nil {
		return fmt.Errorf("record host key of %s: %w", c.host, err)
	}
	unlock, err := safefile.Lock(context.Background(), c.path+".lock")
	if err != nil {
		return fmt.Errorf("record host key of %s: %w", c.host, err)
	}
	defer unlock()

	saved := c.acceptNew
	c.acceptNew = false
	err = c.check(addr, remote, key)
	c.acceptNew = saved
	var he *HostKeyError
	if err == nil || !errors.As(err, &he) || he.Kind != HostKeyUnknown {
		return err // recorded meanwhile (nil), or now known with another key
	}

	old, err := os.ReadFile(c.path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("record host key of %s: %w", c.host, err)
	}
	mode := fs.FileMode(0o600)
	if st, err := os.Stat(c.path); err == nil {
		mode = st.Mode().Perm()
	}
	addrs := []string{knownhosts.Normalize(addr)}
	if tcp, ok := remote.(*net.TCPAddr); ok {
		if _, port, err := net.SplitHostPort(addr); err == nil {
			if ip := knownhosts.Normalize(net.JoinHostPort(tcp.IP.String(), port)); ip != addrs[0] {
				addrs = append(addrs, ip)
			}
		}
	}
	var b bytes.Buffer
	b.Write(old)
	if len(old) > 0 && old[len(old)-1] != '\n' {
		b.WriteByte('\n')
	}
	b.WriteString(knownhosts.Line(addrs, key))
	b.WriteByte('\n')
	if err := safefile.Write(c.path, b.Bytes(), mode); err != nil {
		return fmt.Errorf("record host key of %s: %w", c.host, err)
	}
	return nil
}
