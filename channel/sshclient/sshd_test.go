package sshclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/tests/testbed"
	"github.com/wisent/stado/units"
)

// helperArg makes the test binary act as the forced command: sshd runs
// "<test binary> stado-channel-forced-helper DIR", and TestMain serves
// SSH_ORIGINAL_COMMAND against a Host that records each call in DIR.
const helperArg = "stado-channel-forced-helper"

func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == helperArg {
		os.Exit(channel.Main(context.Background(), nil, os.LookupEnv, os.Stdin, os.Stdout, os.Stderr, &fileHost{dir: os.Args[2]}))
	}
	os.Exit(m.Run())
}

// fileHost records each call as a JSON line in dir/calls; it acts on nothing.
type fileHost struct {
	recordingHost
	dir string
}

func (h *fileHost) log(c hostCall) error {
	b, _ := json.Marshal(c)
	f, err := os.OpenFile(filepath.Join(h.dir, "calls"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Write(append(b, '\n'))
	return err
}

func (h *fileHost) Version(context.Context) (channel.VersionResult, error) {
	return channel.VersionResult{Protocol: channel.ProtocolVersion, OS: "linux"}, h.log(hostCall{Method: "Version"})
}
func (h *fileHost) RepairStep(_ context.Context, r channel.StepRequest) (channel.StepResult, error) {
	env := map[string]string{}
	for _, e := range r.Env {
		env[e.Name] = e.Value
	}
	return channel.StepResult{Step: r.Step, OK: true}, h.log(hostCall{Method: "RepairStep", Step: r.Step, Env: env})
}
func (h *fileHost) UnitShow(_ context.Context, r channel.ShowRequest) (channel.ShowResult, error) {
	res := channel.ShowResult{}
	for _, u := range r.Units {
		res.Units = append(res.Units, units.Verdict{Unit: u, State: units.StateInactive})
	}
	return res, h.log(hostCall{Method: "UnitShow", Scope: r.Scope, Units: r.Units})
}

// realSSHD runs OpenSSH's sshd on 127.0.0.1 with the client key restricted
// to the forced command, the way docs/channel.md sets a host up.
func realSSHD(t *testing.T) (registry.Target, *Pool, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		testbed.Unavailable(t, "a real sshd needs root")
	}
	if _, err := os.Stat("/usr/sbin/sshd"); err != nil {
		testbed.Unavailable(t, "/usr/sbin/sshd is missing (run scripts/deps.sh)")
	}
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil { // sshd's privilege-separation directory
		t.Fatal(err)
	}
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls.d")
	if err := os.Mkdir(calls, 0o700); err != nil {
		t.Fatal(err)
	}
	hostKeyPath, _ := clientKey(t, dir, "host_key") // an unencrypted ed25519 key file serves as a host key
	hostKeyPEM, err := os.ReadFile(hostKeyPath)
	if err != nil {
		t.Fatal(err)
	}
	hostKey, err := ssh.ParsePrivateKey(hostKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	id, pub := clientKey(t, dir, "id")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	authorized := fmt.Sprintf("command=\"%s %s %s\",restrict %s", exe, helperArg, calls, ssh.MarshalAuthorizedKey(pub))
	writeFile(t, filepath.Join(dir, "authorized_keys"), authorized)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	writeFile(t, filepath.Join(dir, "sshd_config"), fmt.Sprintf(`ListenAddress 127.0.0.1:%d
HostKey %s
AuthorizedKeysFile %s
PidFile %s
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
`, port, hostKeyPath, filepath.Join(dir, "authorized_keys"), filepath.Join(dir, "sshd.pid")))
	cmd := exec.Command("/usr/sbin/sshd", "-D", "-e", "-f", filepath.Join(dir, "sshd_config"))
	var logs strings.Builder
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sshd does not listen: %s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	kh := filepath.Join(dir, "known_hosts")
	knownHostsWith(t, kh, hostKey.PublicKey(), fmt.Sprintf("127.0.0.1:%d", port))
	pool := NewPool(&Dialer{KnownHostsPath: kh, IdentityFiles: []string{id}, NoAgent: true, SSHConfigPath: filepath.Join(dir, "none")})
	t.Cleanup(func() { pool.Close() })
	return registry.Target{Name: "sshd1", SSH: registry.SSH{Address: "127.0.0.1", Port: port, User: "root"}}, pool, calls
}

func TestARealSSHDForcedCommandRunsOnlyTheChannelGrammar(t *testing.T) {
	target, pool, calls := realSSHD(t)
	ctx := context.Background()
	marker := filepath.Join(calls, "marker")

	// a valid verb reaches the host, and quoted data survives sshd and the shell intact
	value := "a b; $(touch " + marker + ") `touch " + marker + "` | & > <"
	res, err := pool.Call(ctx, target, channel.Command{Verb: channel.VerbRepairStep, Step: "crypto", Env: []channel.EnvVar{{Name: "NOTE", Value: value}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res), `"step":"crypto"`) {
		t.Fatalf("result %s", res)
	}
	b, err := os.ReadFile(filepath.Join(calls, "calls"))
	if err != nil {
		t.Fatal(err)
	}
	var got hostCall
	if err := json.Unmarshal(b, &got); err != nil || got.Env["NOTE"] != value {
		t.Fatalf("the host saw %s (%v), want NOTE=%q", b, err, value)
	}
	os.Remove(filepath.Join(calls, "calls"))

	client, err := pool.Client(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	raw := []string{
		"id",
		"sh -c 'touch " + marker + "'",
		"version; touch " + marker,
		"version && touch " + marker,
		"unit-show system $(touch " + marker + ").service",
		"unit-show system `touch " + marker + "`.service",
		"unit-remove system a.service /etc/systemd/system/../../" + marker,
		"unit-start system not-a-unit",
		"version\ntouch " + marker,
	}
	for _, line := range raw {
		sess, err := client.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		out, err := sess.Output(line)
		sess.Close()
		var exit *ssh.ExitError
		if !errors.As(err, &exit) || exit.ExitStatus() != channel.ExitRefused {
			t.Fatalf("%q: %v, want exit %d", line, err, channel.ExitRefused)
		}
		if r, _, ok := refusalIn("sshd1", out); !ok || r.Code == "" {
			t.Fatalf("%q printed %q, not one refusal document", line, out)
		}
	}
	// a login without a command is refused too: the forced command is no shell
	sess, err := client.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	sess.Stdout = &out
	if err := sess.Shell(); err != nil {
		t.Fatal(err)
	}
	err = sess.Wait()
	var exit *ssh.ExitError
	if !errors.As(err, &exit) || exit.ExitStatus() != channel.ExitRefused || !strings.Contains(out.String(), string(channel.CodeEmptyCommand)) {
		t.Fatalf("login: %v, %q", err, out.String())
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a refused command created the marker file")
	}
	if _, err := os.Stat(filepath.Join(calls, "calls")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a refused command reached the host")
	}
}
