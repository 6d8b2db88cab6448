package sshclient

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
)

// fixture is one server, one authorised identity file and a known_hosts
// recording the server's key, under an isolated $HOME.
type fixture struct {
	home       string
	srv        *testServer
	identity   string
	knownHosts string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	home := isolatedHome(t)
	srv := startServer(t)
	id, pub := clientKey(t, home, "id_test")
	srv.Authorize(pub)
	kh := filepath.Join(home, ".ssh", "known_hosts")
	knownHostsWith(t, kh, srv.HostSigner.PublicKey(), srv.HostPort())
	return &fixture{home: home, srv: srv, identity: id, knownHosts: kh}
}

func (f *fixture) dialer() *Dialer {
	return &Dialer{KnownHostsPath: f.knownHosts, IdentityFiles: []string{f.identity}, ConnectTimeout: 5 * time.Second}
}

// remoteErr asserts err is a *RemoteError at stage naming host.
func remoteErr(t *testing.T, err error, host string, stage channel.Stage) *channel.RemoteError {
	t.Helper()
	var re *channel.RemoteError
	if !errors.As(err, &re) {
		t.Fatalf("error %v (%T) is not a *RemoteError", err, err)
	}
	if re.Stage != stage || re.Host != host {
		t.Fatalf("failure at %s on %q, want %s on %q: %v", re.Stage, re.Host, stage, host, err)
	}
	if !strings.HasPrefix(re.Error(), host+": ") {
		t.Fatalf("message %q does not name the host first", re.Error())
	}
	return re
}

func TestRunOverAKnownHostKeyReachesTheHost(t *testing.T) {
	f := newFixture(t)
	pool := NewPool(f.dialer())
	defer pool.Close()
	stdout, _, err := pool.Run(context.Background(), f.srv.Target("web1"), []string{"version"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(stdout) != "version" {
		t.Fatalf("stdout %q", stdout)
	}
}

func TestRunSendsArgvAsOneLineTheGrammarSplitsBack(t *testing.T) {
	f := newFixture(t)
	got := make(chan string, 1)
	f.srv.SetHandler(func(cmd string, _ io.Reader, _, _ io.Writer) int { got <- cmd; return 0 })
	pool := NewPool(f.dialer())
	defer pool.Close()
	argv := []string{"/usr/local/bin/stado", "host", "channel", "repair-step", "crypto", "NOTE=a b; $(id) `x` | &", "EMPTY="}
	if _, _, err := pool.Run(context.Background(), f.srv.Target("web1"), argv, nil); err != nil {
		t.Fatal(err)
	}
	// The server receives argv as Quote joins it, which the grammar splits
	// back into exactly argv (channel's TestQuoteRoundTripsEveryAcceptedArgv).
	line := <-got
	want, err := channel.Quote(argv)
	if err != nil || line != want {
		t.Fatalf("the server received %q, want %q (%v)", line, want, err)
	}
}

func TestUnknownHostKeyIsRefusedWithItsFingerprint(t *testing.T) {
	f := newFixture(t)
	os.Remove(f.knownHosts)
	pool := NewPool(f.dialer())
	defer pool.Close()
	_, _, err := pool.Run(context.Background(), f.srv.Target("web1"), []string{"version"}, nil)
	remoteErr(t, err, "web1", channel.StageHostKey)
	var he *HostKeyError
	if !errors.As(err, &he) {
		t.Fatalf("%v carries no *HostKeyError", err)
	}
	want := ssh.FingerprintSHA256(f.srv.HostSigner.PublicKey())
	if he.Kind != HostKeyUnknown || he.Fingerprint != want || he.RefusalCode() != "host_key_unknown" {
		t.Fatalf("host key error %+v, want unknown %s", he, want)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("message %q lacks the fingerprint", err)
	}
	if f.srv.Commands.Load() != 0 {
		t.Fatal("a command ran on a host whose key is unknown")
	}
	if _, err := os.Stat(f.knownHosts); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("known_hosts was written without --accept-new-host-key: %v", err)
	}
}

func TestAcceptNewHostKeyRecordsItAndTheNextConnectNeedsNoFlag(t *testing.T) {
	f := newFixture(t)
	os.Remove(f.knownHosts)
	d := f.dialer()
	d.AcceptNewHostKey = true
	pool := NewPool(d)
	if _, _, err := pool.Run(context.Background(), f.srv.Target("web1"), []string{"version"}, nil); err != nil {
		t.Fatal(err)
	}
	pool.Close()
	b, err := os.ReadFile(f.knownHosts)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "[127.0.0.1]:") || strings.Count(string(b), "\n") != 1 {
		t.Fatalf("known_hosts holds %q, want one plain line for [127.0.0.1]:port", b)
	}
	if st, _ := os.Stat(f.knownHosts); st.Mode().Perm() != 0o600 {
		t.Fatalf("known_hosts mode %v", st.Mode().Perm())
	}
	entries, _ := os.ReadDir(filepath.Dir(f.knownHosts))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".tmp~") {
			t.Fatalf("temporary file %s left behind", e.Name())
		}
	}
	again := NewPool(f.dialer()) // no AcceptNewHostKey
	defer again.Close()
	if _, _, err := again.Run(context.Background(), f.srv.Target("web1"), []string{"version"}, nil); err != nil {
		t.Fatalf("second connect without the flag: %v", err)
	}
}

func TestAcceptNewHostKeyFromManyHostsAtOnceKeepsEveryKey(t *testing.T) {
	f := newFixture(t)
	os.Remove(f.knownHosts)
	var targets []registry.Target
	for i := range 6 {
		s := startServer(t)
		s.Authorize(mustPublicKey(t, f.identity))
		targets = append(targets, s.Target(fmt.Sprintf("h%d", i)))
	}
	d := f.dialer()
	d.AcceptNewHostKey = true
	pool := NewPool(d)
	defer pool.Close()
	channel.FanOut(context.Background(), targets, 6, func(ctx context.Context, h registry.Target) channel.Result {
		_, _, err := pool.Run(ctx, h, []string{"version"}, nil)
		return channel.Result{Err: err}
	}, func(r channel.Result) {
		if r.Err != nil {
			t.Errorf("%s: %v", r.Host, r.Err)
		}
	})
	b, _ := os.ReadFile(f.knownHosts)
	if n := strings.Count(string(b), "\n"); n != len(targets) {
		t.Fatalf("known_hosts holds %d lines after accepting %d hosts concurrently:\n%s", n, len(targets), b)
	}
}

func mustPublicKey(t *testing.T, identity string) ssh.PublicKey {
	t.Helper()
	b, err := os.ReadFile(identity)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.ParsePrivateKey(b)
	if err != nil {
		t.Fatal(err)
	}
	return s.PublicKey()
}

func TestChangedHostKeyIsRefusedEvenWithAcceptNewHostKey(t *testing.T) {
	f := newFixture(t)
	knownHostsWith(t, f.knownHosts, newSigner(t).PublicKey(), f.srv.HostPort())
	before, _ := os.ReadFile(f.knownHosts)
	d := f.dialer()
	d.AcceptNewHostKey = true
	pool := NewPool(d)
	defer pool.Close()
	_, _, err := pool.Run(context.Background(), f.srv.Target("web1"), []string{"version"}, nil)
	remoteErr(t, err, "web1", channel.StageHostKey)
	var he *HostKeyError
	if !errors.As(err, &he) || he.Kind != HostKeyChanged || he.RefusalCode() != "host_key_mismatch" {
		t.Fatalf("want a changed-key refusal, got %v", err)
	}
	if he.Fingerprint != ssh.FingerprintSHA256(f.srv.HostSigner.PublicKey()) {
		t.Fatalf("fingerprint %s is not the offered key's", he.Fingerprint)
	}
	after, _ := os.ReadFile(f.knownHosts)
	if !bytes.Equal(before, after) {
		t.Fatal("known_hosts changed after a refused key change")
	}
	if f.srv.Commands.Load() != 0 {
		t.Fatal("a command ran on a host whose key changed")
	}
}

func TestAKnownKeyIsAskedForWhenTheServerPrefersAnotherType(t *testing.T) {
	home := isolatedHome(t)
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecSigner, _ := ssh.NewSignerFromKey(ecKey)
	edSigner := newSigner(t)
	// x/crypto's client prefers ECDSA; known_hosts records only ed25519
	srv := startServer(t, ecSigner, edSigner)
	id, pub := clientKey(t, home, "id")
	srv.Authorize(pub)
	kh := filepath.Join(home, ".ssh", "known_hosts")
	knownHostsWith(t, kh, edSigner.PublicKey(), srv.HostPort())
	pool := NewPool(&Dialer{KnownHostsPath: kh, IdentityFiles: []string{id}})
	defer pool.Close()
	if _, _, err := pool.Run(context.Background(), srv.Target("web1"), []string{"version"}, nil); err != nil {
		t.Fatalf("a host offering ECDSA first was refused although its ed25519 key is known: %v", err)
	}
}

func TestAuthByAgentNeedsNoIdentityFile(t *testing.T) {
	home := isolatedHome(t)
	srv := startServer(t)
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer, _ := ssh.NewSignerFromKey(priv)
	srv.Authorize(signer.PublicKey())
	kh := filepath.Join(home, ".ssh", "known_hosts")
	knownHostsWith(t, kh, srv.HostSigner.PublicKey(), srv.HostPort())
	t.Setenv("SSH_AUTH_SOCK", startAgent(t, agent.AddedKey{PrivateKey: priv}))
	pool := NewPool(&Dialer{KnownHostsPath: kh})
	defer pool.Close()
	if _, _, err := pool.Run(context.Background(), srv.Target("web1"), []string{"version"}, nil); err != nil {
		t.Fatal(err)
	}
}

func encryptedKey(t *testing.T, dir string) (string, ed25519.PrivateKey) {
	t.Helper()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKeyWithPassphrase(priv, "", []byte("secret"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "id_encrypted")
	if err := os.WriteFile(p, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	return p, priv
}

func TestEncryptedIdentityWithoutAgentIsAClearAuthError(t *testing.T) {
	f := newFixture(t)
	enc, _ := encryptedKey(t, f.home)
	pool := NewPool(&Dialer{KnownHostsPath: f.knownHosts, IdentityFiles: []string{enc}})
	defer pool.Close()
	_, _, err := pool.Run(context.Background(), f.srv.Target("web1"), []string{"version"}, nil)
	remoteErr(t, err, "web1", channel.StageAuth)
	if !strings.Contains(err.Error(), "encrypted") || !strings.Contains(err.Error(), enc) || !strings.Contains(err.Error(), "SSH_AUTH_SOCK") {
		t.Fatalf("message %q does not say which key is encrypted and that no agent is there", err)
	}
}

func TestEncryptedIdentityIsUsedThroughTheAgentHoldingIt(t *testing.T) {
	f := newFixture(t)
	enc, priv := encryptedKey(t, f.home)
	signer, _ := ssh.NewSignerFromKey(priv)
	f.srv.Authorize(signer.PublicKey())
	t.Setenv("SSH_AUTH_SOCK", startAgent(t, agent.AddedKey{PrivateKey: priv}))
	pool := NewPool(&Dialer{KnownHostsPath: f.knownHosts, IdentityFiles: []string{enc}})
	defer pool.Close()
	if _, _, err := pool.Run(context.Background(), f.srv.Target("web1"), []string{"version"}, nil); err != nil {
		t.Fatal(err)
	}
}

func TestAnUnauthorisedKeyFailsAtStageAuth(t *testing.T) {
	f := newFixture(t)
	other, _ := clientKey(t, f.home, "id_other")
	pool := NewPool(&Dialer{KnownHostsPath: f.knownHosts, IdentityFiles: []string{other}})
	defer pool.Close()
	_, _, err := pool.Run(context.Background(), f.srv.Target("web1"), []string{"version"}, nil)
	remoteErr(t, err, "web1", channel.StageAuth)
}

func TestAMissingIdentityFileNamedByTheDialerIsAnAuthError(t *testing.T) {
	f := newFixture(t)
	missing := filepath.Join(f.home, "nope")
	pool := NewPool(&Dialer{KnownHostsPath: f.knownHosts, IdentityFiles: []string{missing}})
	defer pool.Close()
	_, _, err := pool.Run(context.Background(), f.srv.Target("web1"), []string{"version"}, nil)
	remoteErr(t, err, "web1", channel.StageAuth)
}

// TestNothingListeningIsStageConnectEvenWithNoIdentity: with no key and no
// agent, a closed loopback port is still reported as the connect failure it
// is, not as an authentication failure that never happened.
func TestNothingListeningIsStageConnectEvenWithNoIdentity(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close() // nothing listens there now
	d := &Dialer{KnownHostsPath: filepath.Join(home, "known_hosts"), NoAgent: true}
	_, _, err = d.DialEndpoint(context.Background(), Endpoint{Host: "web9", Address: "127.0.0.1", Port: port})
	remoteErr(t, err, "web9", channel.StageConnect)
}

func TestPoolReusesOneConnectionForEveryCallToAHost(t *testing.T) {
	f := newFixture(t)
	pool := NewPool(f.dialer())
	defer pool.Close()
	target := f.srv.Target("web1")
	const calls = 12
	var wg sync.WaitGroup
	errs := make(chan error, calls)
	for i := range calls {
		if i == calls/2 {
			wg.Wait() // half concurrent first calls, half after the dial
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, err := pool.Run(context.Background(), target, []string{"version"}, nil)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n, c := f.srv.Accepted.Load(), f.srv.Commands.Load(); n != 1 || c != calls {
		t.Fatalf("%d calls opened %d connections and ran %d commands; want 1 connection", calls, n, c)
	}
}

func TestPoolRedialsAfterAFailedDial(t *testing.T) {
	f := newFixture(t)
	os.Remove(f.knownHosts)
	pool := NewPool(f.dialer())
	defer pool.Close()
	target := f.srv.Target("web1")
	if _, _, err := pool.Run(context.Background(), target, []string{"version"}, nil); err == nil {
		t.Fatal("unknown host key accepted")
	}
	knownHostsWith(t, f.knownHosts, f.srv.HostSigner.PublicKey(), f.srv.HostPort())
	if _, _, err := pool.Run(context.Background(), target, []string{"version"}, nil); err != nil {
		t.Fatalf("the pool kept a failed dial: %v", err)
	}
}

func TestConnectFailureNamesTheHostAndStageConnect(t *testing.T) {
	f := newFixture(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close() // nothing listens there now
	pool := NewPool(f.dialer())
	defer pool.Close()
	target := registry.Target{Name: "web9", SSH: registry.SSH{Address: "127.0.0.1", Port: port}}
	_, _, err = pool.Run(context.Background(), target, []string{"version"}, nil)
	re := remoteErr(t, err, "web9", channel.StageConnect)
	if re.Address != fmt.Sprintf("127.0.0.1:%d", port) {
		t.Fatalf("address %q", re.Address)
	}
}

func TestRemoteExitCarriesItsStatusAndTheTailOfStderr(t *testing.T) {
	f := newFixture(t)
	f.srv.SetHandler(func(_ string, _ io.Reader, stdout, stderr io.Writer) int {
		io.WriteString(stdout, "partial")
		for i := 1; i <= 30; i++ {
			fmt.Fprintf(stderr, "line %d\n", i)
		}
		return 7
	})
	pool := NewPool(f.dialer())
	defer pool.Close()
	stdout, _, err := pool.Run(context.Background(), f.srv.Target("web1"), []string{"systemctl", "restart", "a.service"}, nil)
	re := remoteErr(t, err, "web1", channel.StageRemoteExit)
	if re.ExitStatus != 7 {
		t.Fatalf("exit status %d", re.ExitStatus)
	}
	if !strings.HasSuffix(re.StderrTail, "line 30") || strings.Contains(re.StderrTail, "line 10\n") || strings.Count(re.StderrTail, "\n") != stderrTailRows-1 {
		t.Fatalf("stderr tail %q, want the last %d lines", re.StderrTail, stderrTailRows)
	}
	if string(stdout) != "partial" {
		t.Fatalf("stdout %q", stdout)
	}
	if !strings.Contains(err.Error(), "stderr: line 30") {
		t.Fatalf("message %q lacks the stderr tail", err)
	}
}

func TestClientReturnsTheHostsTypedResultThroughTheRemoteProgram(t *testing.T) {
	f := newFixture(t)
	host := &recordingHost{}
	serveChannel(f.srv, host)
	pool := NewPool(f.dialer())
	defer pool.Close()
	c := &Client{Pool: pool, Target: f.srv.Target("web1")}
	res, err := c.UnitInstall(context.Background(), channel.InstallRequest{UnitRef: channel.UnitRef{Scope: channel.ScopeSystem, Unit: "a.service"}, Path: "/etc/systemd/system/a.service", Content: []byte("[Unit]\n")})
	if err != nil || res.Action != "installed" || res.Path != "/etc/systemd/system/a.service" {
		t.Fatalf("result %+v, %v", res, err)
	}
	calls := host.Calls()
	if len(calls) != 1 || calls[0].Content != "[Unit]\n" || calls[0].Path != "/etc/systemd/system/a.service" {
		t.Fatalf("host calls %+v", calls)
	}
}

func TestEnsureIsOneRemoteExecutionCarryingTheDeclaration(t *testing.T) {
	f := newFixture(t)
	host := &recordingHost{}
	serveChannel(f.srv, host)
	pool := NewPool(f.dialer())
	defer pool.Close()
	c := &Client{Pool: pool, Target: f.srv.Target("web1")}
	req := channel.EnsureRequest{OS: "linux", Mode: channel.ModeApply, Settle: time.Second}
	req.Service.Name, req.Service.Unit, req.Service.Program = "api", "api.service", "/usr/bin/api"
	res, err := c.Ensure(context.Background(), req)
	if err != nil || !res.Confirmed || res.Run != channel.RunNone {
		t.Fatalf("ensure %+v, %v", res, err)
	}
	calls := host.Calls()
	if len(calls) != 1 || calls[0].Method != "Ensure" || calls[0].Units[0] != "api.service" || calls[0].Content != channel.ModeApply {
		t.Fatalf("host calls %+v", calls)
	}
	if n := f.srv.Commands.Load(); n != 1 {
		t.Fatalf("%d remote executions, want 1", n)
	}
}

// A host whose stado predates the serving read in ensure refuses the
// field; the client asks again without it, and the ensure goes through.
func TestEnsureAsksAgainWithoutTheServingReadWhenTheHostPredatesIt(t *testing.T) {
	f := newFixture(t)
	host := &recordingHost{}
	var refused atomic.Int32
	f.srv.SetHandler(func(cmd string, stdin io.Reader, stdout, stderr io.Writer) int {
		body, _ := io.ReadAll(stdin)
		if bytes.Contains(body, []byte(`"serving"`)) { // what an older stado answers
			refused.Add(1)
			writeDocument(stdout, channel.RefusalDocument{Kind: channel.KindRefusal, Protocol: channel.ProtocolVersion, Verb: channel.VerbEnsure, Code: string(channel.CodeInvalidContent),
				Message: `ensure request on stdin is not a request document: json: unknown field "serving"`})
			return channel.ExitRefused
		}
		return channel.Serve(context.Background(), cmd, bytes.NewReader(body), stdout, stderr, host)
	})
	pool := NewPool(f.dialer())
	defer pool.Close()
	c := &Client{Pool: pool, Target: f.srv.Target("web1")}
	req := channel.EnsureRequest{OS: "linux", Mode: channel.ModeApply, Settle: time.Second, Serving: &channel.ServingPort{Port: 8080}}
	req.Service.Name, req.Service.Unit, req.Service.Program = "api", "api.service", "/usr/bin/api"
	res, err := c.Ensure(context.Background(), req)
	if err != nil || !res.Confirmed || res.Serving != nil {
		t.Fatalf("ensure %+v, %v", res, err)
	}
	if refused.Load() != 1 || len(host.Calls()) != 1 {
		t.Fatalf("%d refusals and host calls %+v, want one of each", refused.Load(), host.Calls())
	}
}

// Whether a host predates the serving read is decided by the capabilities
// its refusal advertises, never by the refusal's wording: a host that has
// the capability and refuses with the very words an older stado uses is
// not asked again, and an older host whose words differ is.
func TestEnsureDecidesTheHostPredatesTheServingReadByItsCapabilitiesNotItsMessage(t *testing.T) {
	cases := []struct {
		name    string
		caps    []channel.Capability // what the refusing host advertises
		message string
		asks    int // ensure calls the host sees
		refused bool
	}{
		// a current host refusing the content for another reason, in the
		// words an older one uses for the field: one call, the refusal stands
		{"capable host, older wording", channel.HostCapabilities(), `ensure request on stdin is not a request document: json: unknown field "serving"`, 1, true},
		// an older host whose decoder words the refusal otherwise: asked again
		{"older host, other wording", nil, `ensure request: unknown object member name "serving"`, 2, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			host := &recordingHost{}
			var asks atomic.Int32
			f.srv.SetHandler(func(cmd string, stdin io.Reader, stdout, stderr io.Writer) int {
				asks.Add(1)
				body, _ := io.ReadAll(stdin)
				if bytes.Contains(body, []byte(`"serving"`)) {
					writeDocument(stdout, channel.RefusalDocument{Kind: channel.KindRefusal, Protocol: channel.ProtocolVersion, Capabilities: tc.caps, Verb: channel.VerbEnsure,
						Code: string(channel.CodeInvalidContent), Message: tc.message})
					return channel.ExitRefused
				}
				return channel.Serve(context.Background(), cmd, bytes.NewReader(body), stdout, stderr, host)
			})
			pool := NewPool(f.dialer())
			defer pool.Close()
			c := &Client{Pool: pool, Target: f.srv.Target("web1")}
			req := channel.EnsureRequest{OS: "linux", Mode: channel.ModeApply, Settle: time.Second, Serving: &channel.ServingPort{Port: 8080}}
			req.Service.Name, req.Service.Unit, req.Service.Program = "api", "api.service", "/usr/bin/api"
			_, err := c.Ensure(context.Background(), req)
			if n := asks.Load(); n != int32(tc.asks) {
				t.Fatalf("the host was asked %d times, want %d (%v)", n, tc.asks, err)
			}
			if tc.refused {
				if re := remoteErr(t, err, "web1", channel.StageRemoteRefusal); !re.HostHas(channel.CapEnsureServing) {
					t.Fatalf("the refusal lost the host's capabilities: %+v", re)
				}
			} else if err != nil {
				t.Fatalf("ensure: %v", err)
			}
		})
	}
}

// Every document the remote program prints advertises its capabilities.
func TestEveryChannelDocumentAdvertisesTheHostsCapabilities(t *testing.T) {
	for _, cmd := range []string{"stado host channel version", "stado host channel no-such-verb"} {
		var out, errb bytes.Buffer
		channel.Serve(context.Background(), cmd, nil, &out, &errb, &recordingHost{})
		var doc struct {
			Kind         string
			Capabilities []channel.Capability
		}
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil || !reflect.DeepEqual(doc.Capabilities, channel.HostCapabilities()) {
			t.Fatalf("%s printed %s (%v), want capabilities %v", cmd, out.Bytes(), err, channel.HostCapabilities())
		}
	}
}

func TestARefusedCommandIsARemoteRefusalAndRunsNothing(t *testing.T) {
	f := newFixture(t)
	host := &recordingHost{}
	serveChannel(f.srv, host)
	pool := NewPool(f.dialer())
	defer pool.Close()
	for _, argv := range [][]string{{"id"}, {"sh", "-c", "touch /tmp/marker"}, {"unit-start", "system", "../a.service"}} {
		_, _, err := pool.Run(context.Background(), f.srv.Target("web1"), argv, nil)
		re := remoteErr(t, err, "web1", channel.StageRemoteRefusal)
		var r *channel.Refusal
		if !errors.As(err, &r) || r.Code == "" || re.ExitStatus != channel.ExitRefused {
			t.Fatalf("%q: %v, want a coded refusal with exit 3", argv, err)
		}
		var coded refusal.Coded
		if !errors.As(err, &coded) {
			t.Fatal("a remote refusal does not map to a refusal code")
		}
	}
	if calls := host.Calls(); len(calls) != 0 {
		t.Fatalf("refused commands reached the host: %+v", calls)
	}
}

func TestAFailedHostActionIsARemoteExitWithTheHostMessage(t *testing.T) {
	f := newFixture(t)
	serveChannel(f.srv, &recordingHost{err: errHostBroken})
	pool := NewPool(f.dialer())
	defer pool.Close()
	_, err := pool.Call(context.Background(), f.srv.Target("web1"), channel.Command{Verb: channel.VerbUnitRestart, Scope: channel.ScopeSystem, Units: []string{"a.service"}}, nil)
	re := remoteErr(t, err, "web1", channel.StageRemoteExit)
	if re.ExitStatus != channel.ExitFailure || !strings.Contains(err.Error(), errHostBroken.Error()) {
		t.Fatalf("%v", err)
	}
	b, _ := json.Marshal(re)
	var doc map[string]any
	if json.Unmarshal(b, &doc) != nil || doc["host"] != "web1" || doc["stage"] != "remote_exit" || doc["message"] == "" {
		t.Fatalf("JSON form %s", b)
	}
}

func TestCallRefusesAnInvalidCommandBeforeConnecting(t *testing.T) {
	f := newFixture(t)
	pool := NewPool(f.dialer())
	defer pool.Close()
	bad := channel.Command{Verb: channel.VerbUnitStart, Scope: channel.ScopeSystem, Units: []string{"$(id).service"}}
	_, err := pool.Call(context.Background(), f.srv.Target("web1"), bad, nil)
	var r *channel.Refusal
	if !errors.As(err, &r) || r.Code != channel.CodeInvalidUnit {
		t.Fatalf("%v, want an invalid_unit refusal", err)
	}
	if f.srv.Accepted.Load() != 0 {
		t.Fatal("an invalid command was sent to the host")
	}
}

func TestKeepalivesAreSentOnAnIdleConnection(t *testing.T) {
	f := newFixture(t)
	d := f.dialer()
	d.KeepAlive = 10 * time.Millisecond
	pool := NewPool(d)
	defer pool.Close()
	if _, err := pool.Client(context.Background(), f.srv.Target("web1")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for f.srv.Keepalives.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no keepalives seen (%d)", f.srv.Keepalives.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestSSHConfigHostNamePortUserAndIdentityFileAreHonoured(t *testing.T) {
	f := newFixture(t)
	f.srv.User = "deploy"
	cfg := filepath.Join(f.home, ".ssh", "config")
	writeFile(t, cfg, fmt.Sprintf("Host web1\n  HostName 127.0.0.1\n  Port %d\n  User deploy\n  IdentityFile %s\n", f.srv.Port, "~/id_test"))
	d := &Dialer{KnownHostsPath: f.knownHosts} // no identity given: the config names it
	ep, err := d.Resolve(registry.Target{Name: "web1"})
	if err != nil {
		t.Fatal(err)
	}
	want := Endpoint{Host: "web1", Address: "127.0.0.1", Port: f.srv.Port, User: "deploy", IdentityFiles: []string{f.identity}}
	if !reflect.DeepEqual(ep, want) {
		t.Fatalf("endpoint %+v, want %+v", ep, want)
	}
	pool := NewPool(d)
	defer pool.Close()
	if _, _, err := pool.Run(context.Background(), registry.Target{Name: "web1"}, []string{"version"}, nil); err != nil {
		t.Fatal(err)
	}
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

func TestFanOutOverThePoolCompletesTheOtherHostsWhenOneIsDown(t *testing.T) {
	f := newFixture(t)
	var targets []registry.Target
	for i := range 3 {
		s := startServer(t)
		s.Authorize(mustPublicKey(t, f.identity))
		targets = append(targets, s.Target(fmt.Sprintf("h%d", i)))
		knownHostsAppend(t, f.knownHosts, s)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	downPort := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	targets[1].SSH.Port = downPort
	pool := NewPool(f.dialer())
	defer pool.Close()
	var lines []string
	results := channel.FanOut(context.Background(), targets, 0, func(ctx context.Context, h registry.Target) channel.Result {
		out, _, err := pool.Run(ctx, h, []string{"unit-restart", "system", "a.service"}, nil)
		return channel.Result{Value: string(out), Err: err}
	}, func(r channel.Result) { lines = append(lines, r.Host) })
	if len(lines) != 3 {
		t.Fatalf("result lines %q", lines)
	}
	for i, r := range results {
		switch {
		case i == 1:
			remoteErr(t, r.Err, "h1", channel.StageConnect)
		case r.Err != nil || r.Value != "unit-restart system a.service":
			t.Fatalf("%s: %v %v", r.Host, r.Value, r.Err)
		}
	}
}

func knownHostsAppend(t *testing.T, path string, s *testServer) {
	t.Helper()
	old, _ := os.ReadFile(path)
	tmp := filepath.Join(t.TempDir(), "kh")
	knownHostsWith(t, tmp, s.HostSigner.PublicKey(), s.HostPort())
	line, _ := os.ReadFile(tmp)
	writeFile(t, path, string(old)+string(line))
}

// writeDocument prints doc as the remote program prints its documents: one
// line of JSON.
func writeDocument(w io.Writer, doc any) {
	b, err := json.Marshal(doc)
	if err != nil {
		panic(err)
	}
	_, _ = w.Write(append(b, '\n'))
}

// restart, stop and remove of a user unit carry the target's launchd
// domain to the host in the verb's words; a host whose stado predates the
// word refuses it, and the client says the host cannot act in that domain
// (never acting in another one).
func TestUnitVerbsCarryTheLaunchdDomainAndAnOlderHostIsNamed(t *testing.T) {
	f := newFixture(t)
	host := &recordingHost{os: "darwin"}
	serveChannel(f.srv, host)
	pool := NewPool(f.dialer())
	defer pool.Close()
	c := &Client{Pool: pool, Target: f.srv.Target("web1")}
	ctx := context.Background()
	u := channel.UnitRef{Scope: channel.ScopeUser, Unit: "com.x.agent", Domain: "gui/501"}
	if _, err := c.UnitRestart(ctx, u); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UnitStop(ctx, u); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UnitRemove(ctx, channel.RemoveRequest{UnitRef: u}); err != nil {
		t.Fatal(err)
	}
	for _, call := range host.Calls() {
		if call.Domain != "gui/501" {
			t.Errorf("%s reached the host without its domain: %+v", call.Method, call)
		}
	}

	old := newFixture(t)
	var asked atomic.Int32
	old.srv.SetHandler(func(cmd string, stdin io.Reader, stdout, stderr io.Writer) int {
		asked.Add(1)
		writeDocument(stdout, channel.RefusalDocument{Kind: channel.KindRefusal, Protocol: channel.ProtocolVersion, Capabilities: []channel.Capability{channel.CapEnsureServing},
			Verb: channel.VerbUnitRestart, Code: string(channel.CodeInvalidArguments), Message: "unit-restart takes SCOPE UNIT, got 3 argument(s)"})
		return channel.ExitRefused
	})
	oldPool := NewPool(old.dialer())
	defer oldPool.Close()
	oc := &Client{Pool: oldPool, Target: old.srv.Target("web1")}
	_, err := oc.UnitRestart(ctx, u)
	var r *refusal.Error
	if !errors.As(err, &r) || r.Code != refusal.InvalidScope || !strings.Contains(r.Message, "gui/501") || asked.Load() != 1 {
		t.Fatalf("older host: %v (asked %d times), want one ask and an invalid_scope refusal naming the domain", err, asked.Load())
	}
}
