package channeltest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/wisent/stado/registry"
)

// Server is a real x/crypto/ssh server on 127.0.0.1:0 with a generated
// host key. It accepts public keys listed in authorized (for user, when
// set), answers keepalives, and runs exec requests through handler.
type Server struct {
	ln          net.Listener
	Port        int          // the port it listens on; a test may point Target elsewhere by changing it
	HostSigner  ssh.Signer   // the first host key
	HostSigners []ssh.Signer // all host keys offered
	User        string       // when set, the only user admitted; set it before the first connection

	mu         sync.Mutex
	authorized map[string]bool
	handler    func(cmd string, stdin io.Reader, stdout, stderr io.Writer) int

	Accepted   atomic.Int32 // TCP connections accepted
	Keepalives atomic.Int32 // keepalive@openssh.com requests answered
	Commands   atomic.Int32 // exec requests run
}

// StartServer starts a Server offering hostKeys (one new ed25519 key when
// none) whose handler echoes the command; t's cleanup stops it.
func StartServer(t testing.TB, hostKeys ...ssh.Signer) *Server {
	t.Helper()
	if len(hostKeys) == 0 {
		hostKeys = []ssh.Signer{NewSigner(t)}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{ln: ln, Port: ln.Addr().(*net.TCPAddr).Port, HostSigner: hostKeys[0], HostSigners: hostKeys, authorized: map[string]bool{}}
	s.handler = func(cmd string, _ io.Reader, stdout, _ io.Writer) int {
		io.WriteString(stdout, cmd)
		return 0
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			s.Accepted.Add(1)
			wg.Add(1)
			go func() { defer wg.Done(); s.serveConn(conn) }()
		}
	}()
	return s
}

// Authorize admits k.
func (s *Server) Authorize(k ssh.PublicKey) {
	s.mu.Lock()
	s.authorized[string(k.Marshal())] = true
	s.mu.Unlock()
}

// SetHandler makes the server run every exec request through h, which
// returns the exit status.
func (s *Server) SetHandler(h func(cmd string, stdin io.Reader, stdout, stderr io.Writer) int) {
	s.mu.Lock()
	s.handler = h
	s.mu.Unlock()
}

func (s *Server) serveConn(conn net.Conn) {
	defer conn.Close()
	cfg := &ssh.ServerConfig{
		PublicKeyCallback: func(md ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.User != "" && md.User() != s.User {
				return nil, errors.New("wrong user")
			}
			if !s.authorized[string(k.Marshal())] {
				return nil, errors.New("key not authorized")
			}
			return nil, nil
		},
	}
	for _, k := range s.HostSigners {
		cfg.AddHostKey(k)
	}
	sc, chans, reqs, err := ssh.NewServerConn(conn, cfg)
	if err != nil {
		return
	}
	defer sc.Close()
	go func() {
		for req := range reqs {
			if req.Type == "keepalive@openssh.com" {
				s.Keepalives.Add(1)
				req.Reply(true, nil)
				continue
			}
			req.Reply(false, nil)
		}
	}()
	for nc := range chans {
		if nc.ChannelType() != "session" {
			nc.Reject(ssh.UnknownChannelType, "session only")
			continue
		}
		ch, creqs, err := nc.Accept()
		if err != nil {
			return
		}
		go s.serveSession(ch, creqs)
	}
}

func (s *Server) serveSession(ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer ch.Close()
	for req := range reqs {
		if req.Type != "exec" {
			req.Reply(false, nil)
			continue
		}
		var payload struct{ Command string }
		if err := ssh.Unmarshal(req.Payload, &payload); err != nil {
			req.Reply(false, nil)
			return
		}
		req.Reply(true, nil)
		s.Commands.Add(1)
		s.mu.Lock()
		h := s.handler
		s.mu.Unlock()
		code := h(payload.Command, ch, ch, ch.Stderr())
		status := make([]byte, 4)
		binary.BigEndian.PutUint32(status, uint32(code))
		ch.SendRequest("exit-status", false, status)
		return
	}
}

// Target is a registry target reaching this server directly.
func (s *Server) Target(name string) registry.Target {
	return registry.Target{Name: name, SSH: registry.SSH{Address: "127.0.0.1", Port: s.Port, User: "op"}}
}

// HostPort is the server's address as known_hosts records it.
func (s *Server) HostPort() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)) }

// NewSigner is a new ed25519 host or client key.
func NewSigner(t testing.TB) ssh.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// ClientKey writes a new unencrypted ed25519 identity file and returns its
// path and public key.
func ClientKey(t testing.TB, dir, name string) (string, ssh.PublicKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	k, _ := ssh.NewPublicKey(pub)
	return p, k
}

// IsolatedHome gives the test its own $HOME and no agent.
func IsolatedHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("SSH_AUTH_SOCK", "")
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	return home
}

// KnownHostsWith writes a known_hosts file recording key for addrs, the
// way the testbed writes one: plain "host,addr keytype base64" lines.
func KnownHostsWith(t *testing.T, path string, key ssh.PublicKey, addrs ...string) {
	t.Helper()
	for i, a := range addrs {
		addrs[i] = knownhosts.Normalize(a)
	}
	line := knownhosts.Line(addrs, key) + "\n"
	if err := os.WriteFile(path, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
}

// StartAgent serves an in-process agent keyring holding keys on a unix
// socket and returns the socket path.
func StartAgent(t *testing.T, keys ...agent.AddedKey) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "stado-agent")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	keyring := agent.NewKeyring()
	for _, k := range keys {
		if err := keyring.Add(k); err != nil {
			t.Fatal(err)
		}
	}
	sock := filepath.Join(dir, "agent.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() { defer wg.Done(); defer c.Close(); agent.ServeAgent(keyring, c) }()
		}
	}()
	return sock
}
