package sshclient

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/registry"
)

// Dialer opens SSH connections to registry targets. The zero value is
// usable: every path defaults below $HOME/.ssh, the agent to $SSH_AUTH_SOCK.
// A Dialer is safe for concurrent use once its fields are set.
type Dialer struct {
	// KnownHostsPath is the known_hosts file; default ~/.ssh/known_hosts.
	// Host keys are always checked against it.
	KnownHostsPath string
	// IdentityFiles are private keys tried after the ssh_config's
	// IdentityFile entries. Each must exist. When neither names one, the
	// defaults ~/.ssh/id_ed25519, id_ecdsa and id_rsa that exist are tried.
	IdentityFiles []string
	// SSHConfigPath is the ssh_config read for the target name; default
	// ~/.ssh/config. A missing file is an empty config.
	SSHConfigPath string
	// AcceptNewHostKey records an unknown host key instead of refusing it.
	// A changed key is refused regardless.
	AcceptNewHostKey bool
	// AgentSocket is the ssh-agent socket; default $SSH_AUTH_SOCK. NoAgent
	// disables the agent.
	AgentSocket string
	NoAgent     bool
	// ConnectTimeout bounds TCP connect, handshake and authentication;
	// default 10s.
	ConnectTimeout time.Duration
	// KeepAlive is the interval of keepalive@openssh.com requests; default
	// 15s, negative disables. After KeepAliveMissed unanswered intervals
	// (default 3) the connection is closed.
	KeepAlive       time.Duration
	KeepAliveMissed int
}

// Endpoint is where and as whom a target is reached, after the registry and
// ssh_config are applied.
type Endpoint struct {
	Host          string   // the target name
	Address       string   // host name or IP to connect to
	Port          int      //
	User          string   //
	IdentityFiles []string // expanded, in the order tried
	Explicit      int      // how many of the last IdentityFiles came from the Dialer (and must exist)
}

// HostPort is Address:Port.
func (e Endpoint) HostPort() string { return net.JoinHostPort(e.Address, strconv.Itoa(e.Port)) }

func (d *Dialer) home() string {
	h, err := os.UserHomeDir()
	if err != nil {
		return "/"
	}
	return h
}

// KnownHostsFile is the known_hosts file the Dialer checks host keys
// against: KnownHostsPath, or ~/.ssh/known_hosts.
func (d *Dialer) KnownHostsFile() string {
	if d.KnownHostsPath != "" {
		return d.KnownHostsPath
	}
	return filepath.Join(d.home(), ".ssh", "known_hosts")
}

// Resolve applies the registry target and ssh_config: a value the registry
// sets wins, ssh_config (matched on the target name) fills what it leaves
// empty, then the defaults apply (address: the target name, port 22, user
// root). Errors are *ConfigError or I/O errors reading the config.
func (d *Dialer) Resolve(t registry.Target) (Endpoint, error) {
	cfgPath := d.SSHConfigPath
	if cfgPath == "" {
		cfgPath = filepath.Join(d.home(), ".ssh", "config")
	}
	cfg, err := LoadSSHConfig(cfgPath)
	if err != nil {
		return Endpoint{}, err
	}
	hc := cfg.Lookup(t.Name)
	ep := Endpoint{Host: t.Name, Address: t.SSH.Address, Port: t.SSH.Port, User: t.SSH.User}
	if ep.Address == "" {
		ep.Address = hc.HostName
	}
	if ep.Address == "" {
		ep.Address = t.Name
	} else if strings.Contains(ep.Address, "%") {
		ep.Address = strings.NewReplacer("%h", t.Name, "%%", "%").Replace(ep.Address)
	}
	if ep.Port == 0 {
		ep.Port = hc.Port
	}
	if ep.Port == 0 {
		ep.Port = 22
	}
	if ep.User == "" {
		ep.User = hc.User
	}
	if ep.User == "" {
		ep.User = "root"
	}
	for _, f := range hc.IdentityFiles {
		p, err := expandTokens(f, t.Name, ep.Address, ep.User)
		if err != nil {
			return Endpoint{}, fmt.Errorf("ssh config %s: IdentityFile: %w", cfgPath, err)
		}
		ep.IdentityFiles = append(ep.IdentityFiles, p)
	}
	for _, f := range d.IdentityFiles {
		ep.IdentityFiles = append(ep.IdentityFiles, expandTilde(f))
		ep.Explicit++
	}
	if len(ep.IdentityFiles) == 0 {
		for _, n := range []string{"id_ed25519", "id_ecdsa", "id_rsa"} {
			ep.IdentityFiles = append(ep.IdentityFiles, filepath.Join(d.home(), ".ssh", n))
		}
	}
	return ep, nil
}

// Dial connects and authenticates to t, checking its host key strictly. The
// returned client sends keepalives until it is closed. Every error is a
// *RemoteError naming the host and stage; Dial does not retry.
func (d *Dialer) Dial(ctx context.Context, t registry.Target) (*ssh.Client, error) {
	ep, err := d.Resolve(t)
	if err != nil {
		return nil, &channel.RemoteError{Host: t.Name, Stage: channel.StageConnect, Err: err}
	}
	client, _, err := d.DialEndpoint(ctx, ep)
	return client, err
}

func (d *Dialer) keepAliveInterval() time.Duration {
	switch {
	case d.KeepAlive < 0:
		return 0
	case d.KeepAlive == 0:
		return 15 * time.Second
	}
	return d.KeepAlive
}

// keepAlive sends keepalive@openssh.com every interval and closes the
// client after missed intervals without a reply (any reply, even a
// refusal, proves the peer alive).
func keepAlive(c *ssh.Client, every time.Duration, missed int) {
	done := make(chan struct{})
	go func() { _ = c.Wait(); close(done) }()
	tick := time.NewTicker(every)
	defer tick.Stop()
	reply := make(chan error, 1)
	waiting, silent := false, 0
	for {
		select {
		case <-done:
			return
		case err := <-reply:
			waiting, silent = false, 0
			if err != nil {
				c.Close()
				return
			}
		case <-tick.C:
			if waiting {
				if silent++; silent >= missed {
					c.Close()
					return
				}
				continue
			}
			waiting = true
			go func() {
				_, _, err := c.SendRequest("keepalive@openssh.com", true, nil)
				reply <- err
			}()
		}
	}
}

// authSet is the one public-key method of a dial, and what it knows to
// explain a failure.
type authSet struct {
	method    ssh.AuthMethod
	tried     []string // identities offered
	encrypted []string // identity files skipped for a passphrase
	agentNote string   // why the agent was not used, if it was not
}

func (a authSet) explain(err error) error {
	msg := fmt.Sprintf("%v (offered %s)", err, strings.Join(a.tried, ", "))
	if len(a.encrypted) > 0 {
		msg += fmt.Sprintf("; skipped encrypted %s", strings.Join(a.encrypted, ", "))
	}
	if a.agentNote != "" {
		msg += "; " + a.agentNote
	}
	return errors.New(msg)
}

// authMethod gathers the agent's keys, then the identity files'. An
// encrypted file is skipped (the agent may hold its key); with no usable
// key at all the error says why.
func (d *Dialer) authMethod(ep Endpoint) (authSet, func(), error) {
	var set authSet
	var signers []ssh.Signer
	seen := map[string]bool{}
	add := func(s ssh.Signer, name string) {
		k := string(s.PublicKey().Marshal())
		if !seen[k] {
			seen[k] = true
			signers = append(signers, s)
			set.tried = append(set.tried, name)
		}
	}
	closeAgent := func() {}
	sock := d.AgentSocket
	if sock == "" {
		sock = os.Getenv("SSH_AUTH_SOCK")
	}
	switch {
	case d.NoAgent:
		set.agentNote = "ssh-agent disabled"
	case sock == "":
		set.agentNote = "no ssh-agent (SSH_AUTH_SOCK is not set)"
	default:
		conn, err := net.Dial("unix", sock)
		if err != nil {
			set.agentNote = fmt.Sprintf("ssh-agent at %s unreachable: %v", sock, err)
			break
		}
		closeAgent = func() { conn.Close() }
		agentSigners, err := agent.NewClient(conn).Signers()
		if err != nil {
			set.agentNote = fmt.Sprintf("ssh-agent at %s: %v", sock, err)
			break
		}
		for _, s := range agentSigners {
			add(s, "agent key "+ssh.FingerprintSHA256(s.PublicKey()))
		}
		if len(agentSigners) == 0 {
			set.agentNote = "ssh-agent holds no keys"
		}
	}
	for i, f := range ep.IdentityFiles {
		mustExist := i >= len(ep.IdentityFiles)-ep.Explicit
		b, err := os.ReadFile(f)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && !mustExist {
				continue
			}
			closeAgent()
			return set, nil, fmt.Errorf("read identity file: %w", err)
		}
		s, err := ssh.ParsePrivateKey(b)
		var missing *ssh.PassphraseMissingError
		switch {
		case errors.As(err, &missing):
			set.encrypted = append(set.encrypted, f)
			continue
		case err != nil:
			closeAgent()
			return set, nil, fmt.Errorf("identity file %s: %w", f, err)
		}
		add(s, f)
	}
	if len(signers) == 0 {
		closeAgent()
		if len(set.encrypted) > 0 {
			return set, nil, fmt.Errorf("identity file %s is encrypted and no agent holds a key (%s): add it with ssh-add, or use an unencrypted key",
				strings.Join(set.encrypted, ", "), set.agentNote)
		}
		return set, nil, fmt.Errorf("no identity to offer: %s, and none of %s exists", set.agentNote, strings.Join(ep.IdentityFiles, ", "))
	}
	set.method = ssh.PublicKeys(signers...)
	return set, closeAgent, nil
}

// HostKeySeen is the host key a connection was established with, and the
// address and remote it was checked for: what a kept connection is checked
// against known_hosts again before each reuse (Dialer.Recheck). A re-key
// that presents (and passes the check with) another key replaces it. It is
// safe for concurrent use.
type HostKeySeen struct {
	mu     sync.Mutex
	addr   string
	remote net.Addr
	key    ssh.PublicKey
}

func (s *HostKeySeen) set(addr string, remote net.Addr, key ssh.PublicKey) {
	s.mu.Lock()
	s.addr, s.remote, s.key = addr, remote, key
	s.mu.Unlock()
}

func (s *HostKeySeen) get() (addr string, remote net.Addr, key ssh.PublicKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr, s.remote, s.key
}

// DialEndpoint is Dial after Resolve: it connects and authenticates to an
// already resolved endpoint, checking its host key strictly, and also
// returns the host key the connection was established with. Every error is
// a *RemoteError naming the host and stage; it does not retry.
//
// Dial is Resolve followed by this; the keeper (channel/keeper) calls it
// directly because its client resolves the endpoint in its own environment
// (home, working directory, ssh_config), and it re-checks the returned key
// before each reuse.
func (d *Dialer) DialEndpoint(ctx context.Context, ep Endpoint) (*ssh.Client, *HostKeySeen, error) {
	fail := func(stage channel.Stage, err error) error {
		return &channel.RemoteError{Host: ep.Host, Address: ep.HostPort(), Stage: stage, Err: err}
	}
	timeout := d.ConnectTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	addr := ep.HostPort()
	// Connect first: a host where nothing listens is a connect failure,
	// whatever identities this workstation has.
	conn, err := (&net.Dialer{Timeout: timeout}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, fail(channel.StageConnect, err)
	}
	auth, closeAgent, err := d.authMethod(ep)
	if err != nil {
		conn.Close()
		return nil, nil, fail(channel.StageAuth, err)
	}
	_ = conn.SetDeadline(time.Now().Add(timeout))
	stop := context.AfterFunc(ctx, func() { conn.Close() })

	checker := &hostKeyChecker{host: ep.Host, path: d.KnownHostsFile(), acceptNew: d.AcceptNewHostKey}
	algos, err := knownAlgorithms(checker.path, addr, conn.RemoteAddr())
	if err != nil {
		stop()
		conn.Close()
		closeAgent()
		return nil, nil, fail(channel.StageHostKey, err)
	}
	seen := new(HostKeySeen)
	cfg := &ssh.ClientConfig{
		User: ep.User,
		Auth: []ssh.AuthMethod{auth.method},
		HostKeyCallback: func(addr string, remote net.Addr, key ssh.PublicKey) error {
			if err := checker.callback(addr, remote, key); err != nil {
				return err
			}
			seen.set(addr, remote, key)
			return nil
		},
		HostKeyAlgorithms: algos,
		Timeout:           timeout,
	}
	c, chans, reqs, err := ssh.NewClientConn(conn, addr, cfg)
	closeAgent()
	stopped := stop()
	if err == nil && !stopped {
		err = ctx.Err()
		c.Close()
	}
	if err != nil {
		conn.Close()
		switch {
		case checker.refused != nil:
			return nil, nil, fail(channel.StageHostKey, checker.refused)
		case ctx.Err() != nil:
			return nil, nil, fail(channel.StageConnect, ctx.Err())
		case checker.checked:
			return nil, nil, fail(channel.StageAuth, auth.explain(err))
		default:
			return nil, nil, fail(channel.StageConnect, err)
		}
	}
	_ = conn.SetDeadline(time.Time{})
	client := ssh.NewClient(c, chans, reqs)
	if every := d.keepAliveInterval(); every > 0 {
		missed := d.KeepAliveMissed
		if missed <= 0 {
			missed = 3
		}
		go keepAlive(client, every, missed)
	}
	return client, seen, nil
}

// Recheck checks the key a connection was established with (seen) against
// known_hosts as it is now, by the rules of a new connection to ep (an
// unknown key is recorded when AcceptNewHostKey is set): a refused key is
// the *HostKeyError a new connection would meet. It asks for a redial
// (redial true, err nil) when known_hosts now records the host only with
// keys of other types: a new connection would ask for one of those, and its
// outcome is the one a new connection has. It touches no host.
func (d *Dialer) Recheck(ep Endpoint, seen *HostKeySeen) (redial bool, err error) {
	addr, remote, key := seen.get()
	checker := &hostKeyChecker{host: ep.Host, path: d.KnownHostsFile(), acceptNew: d.AcceptNewHostKey}
	err = checker.check(addr, remote, key)
	var he *HostKeyError
	if errors.As(err, &he) && he.Kind == HostKeyChanged {
		algos, aerr := knownAlgorithms(checker.path, addr, remote)
		if aerr == nil && !slices.ContainsFunc(algorithmsFor(key.Type()), func(a string) bool { return slices.Contains(algos, a) }) {
			return true, nil
		}
	}
	return false, err
}
