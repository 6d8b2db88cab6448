package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/channel/channeltest"
	"github.com/wisent/stado/channel/local"
	"github.com/wisent/stado/channel/sshclient"
	"github.com/wisent/stado/fleet"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
	"github.com/wisent/stado/units"
	"github.com/wisent/stado/units/unitstest"
)

// verifyDoc is the fixture fleet of verify: host1 is an in-process
// local.Host over an in-memory manager and a /proc fixture in which the api
// unit's process listens on 127.0.0.1:8080; down is a real SSH target on a
// closed loopback port.
const verifyDoc = `version: 1
directory:
  - {service: api, host: host1, address: 127.0.0.1, port: 8080}
targets:
  - name: host1
    os: linux
    ssh: {address: 127.0.0.1, port: 1}
    services:
      - name: api
        unit: api.service
        scope: user
        program: /usr/local/bin/api
        args: [--listen, "127.0.0.1:8080"]
      - name: legacy
        unit: legacy.service
        scope: user
        incomplete_reason: legacy.service has 2 ExecStart= lines
  - name: down
    os: linux
    ssh: {address: 127.0.0.1, port: 1}
    services:
      - name: api
        unit: api.service
        scope: user
        program: /usr/local/bin/api
`

type verifyBed struct {
	fleet *fleet.Fleet
	mem   *unitstest.Memory
	home  string
	proc  string
}

// procFixture writes a /proc in which pid 4242 (comm api, in unit's
// cgroup) holds a socket listening on 127.0.0.1:8080.
func procFixture(t *testing.T, unit string) string {
	t.Helper()
	root := t.TempDir()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "net"), 0o755))
	must(os.WriteFile(filepath.Join(root, "net", "tcp"), []byte(
		"  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"+
			"   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 555 1 0000000000000000 100 0 0 10 0\n"), 0o644))
	pid := filepath.Join(root, "4242")
	must(os.MkdirAll(filepath.Join(pid, "fd"), 0o755))
	must(os.WriteFile(filepath.Join(pid, "comm"), []byte("api\n"), 0o644))
	must(os.WriteFile(filepath.Join(pid, "cgroup"), []byte("0::/user.slice/user-0.slice/user@0.service/app.slice/"+unit+"\n"), 0o644))
	must(os.Symlink("socket:[555]", filepath.Join(pid, "fd", "3")))
	return root
}

func newVerifyBed(t *testing.T) *verifyBed {
	t.Helper()
	dir := t.TempDir()
	st, err := store.OpenFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	doc, err := registry.Parse([]byte(verifyDoc), "fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := registry.Push(context.Background(), st, doc, 0, "fixture"); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	mem := unitstest.NewMemory(home)
	proc := procFixture(t, "api.service")
	clock := &fakeClock{now: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
	h := &local.Host{GOOS: "linux", Home: home, ProcRoot: proc, Now: clock.Now, After: clock.After,
		Manager: func(context.Context, string) (units.Manager, func(), error) { return mem, func() {}, nil }}
	pool := sshclient.NewPool(&sshclient.Dialer{KnownHostsPath: dir + "/known_hosts", IdentityFiles: []string{channeltest.WriteKey(t)}, SSHConfigPath: os.DevNull, NoAgent: true, ConnectTimeout: 2 * time.Second})
	t.Cleanup(func() { pool.Close() })
	connect := func(tg registry.Target) channel.Host {
		if tg.Name == "host1" {
			return h
		}
		return &sshclient.Client{Pool: pool, Target: tg}
	}
	f, err := fleet.Open(context.Background(), st, connect)
	if err != nil {
		t.Fatal(err)
	}
	return &verifyBed{fleet: f, mem: mem, home: home, proc: proc}
}

func (b *verifyBed) verify(t *testing.T, o fleet.VerifyOptions) *fleet.VerifyResult {
	t.Helper()
	res, err := b.fleet.Verify(context.Background(), o, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func service(t *testing.T, res *fleet.VerifyResult, host, name string) fleet.ServiceVerify {
	t.Helper()
	for _, h := range res.Hosts {
		if h.Host != host {
			continue
		}
		for _, s := range h.Services {
			if s.Service == name {
				return s
			}
		}
	}
	t.Fatalf("no %s on %s in %+v", name, host, res)
	return fleet.ServiceVerify{}
}

func TestVerifyOfAnEnsuredUnitIsCleanWithItsPortOwned(t *testing.T) {
	b := newVerifyBed(t)
	// the fixture's port owner is in api.service's cgroup, so the ensure's
	// own serving read succeeds
	list, err := b.fleet.Ensure(context.Background(), fleet.EnsureOptions{Name: "api", Hosts: []string{"host1"}, Settle: time.Second}, nil)
	if err != nil || list[0].Serving == nil || !list[0].Serving.Serving || list[0].Serving.PID != 4242 {
		t.Fatalf("ensure: %v %+v", err, list)
	}
	res := b.verify(t, fleet.VerifyOptions{Name: "api", Hosts: []string{"host1"}})
	s := service(t, res, "host1", "api")
	if !s.Clean() || !s.Loaded || s.State != units.StateActive || s.Drift || s.FileAbsent || s.PortState != fleet.PortOwned {
		t.Fatalf("verify of an ensured unit: %+v", s)
	}
	if s.PortOwners[0].PID != 4242 || s.Address != "127.0.0.1" || s.Port != 8080 {
		t.Errorf("port owners %+v at %s:%d", s.PortOwners, s.Address, s.Port)
	}
	if !res.Clean() {
		t.Errorf("the result is not clean: %+v", res)
	}
	if b.mem.Calls["Install"] != 1 || b.mem.Calls["Start"] != 1 {
		t.Errorf("calls %v", b.mem.Calls)
	}
	b.verify(t, fleet.VerifyOptions{})
	if b.mem.Calls["Install"] != 1 || b.mem.Calls["Start"] != 1 || b.mem.Calls["Restart"] != 0 || b.mem.Calls["Stop"] != 0 {
		t.Errorf("verify changed the host: calls %v", b.mem.Calls)
	}
}

func TestVerifyShowsEditedBytesAsDriftWithADiffAndADeletedFileAsAbsent(t *testing.T) {
	b := newVerifyBed(t)
	if _, err := b.fleet.Ensure(context.Background(), fleet.EnsureOptions{Name: "api", Hosts: []string{"host1"}, Settle: time.Second}, nil); err != nil {
		t.Fatal(err)
	}
	path := service(t, b.verify(t, fleet.VerifyOptions{Name: "api"}), "host1", "api").Path
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(data), "Restart=always", "Restart=no", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	s := service(t, b.verify(t, fleet.VerifyOptions{Name: "api", Hosts: []string{"host1"}}), "host1", "api")
	if !s.Drift || s.FileAbsent || s.Clean() || !strings.Contains(s.Diff, "-Restart=no\n+Restart=always\n") {
		t.Fatalf("edited unit: drift %v absent %v diff:\n%s", s.Drift, s.FileAbsent, s.Diff)
	}
	if text := strings.Join(s.Lines(), "\n"); !strings.Contains(text, "drifted from the declaration") || !strings.Contains(text, "    -Restart=no") {
		t.Errorf("text of a drifted unit:\n%s", text)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	s = service(t, b.verify(t, fleet.VerifyOptions{Name: "api", Hosts: []string{"host1"}}), "host1", "api")
	if !s.FileAbsent || !s.Drift || s.Clean() {
		t.Fatalf("deleted unit file: %+v", s)
	}
	if _, err := os.Stat(path); err == nil {
		t.Errorf("verify recreated the unit file")
	}
}

func TestVerifyOfAStoppedUnitIsInactiveAndItsPortFree(t *testing.T) {
	b := newVerifyBed(t)
	if _, err := b.fleet.Ensure(context.Background(), fleet.EnsureOptions{Name: "api", Hosts: []string{"host1"}, Settle: time.Second}, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.mem.Stop(context.Background(), "api.service"); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(b.proc, "4242")); err != nil { // its process is gone
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b.proc, "net", "tcp"), []byte("  sl  local_address\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := service(t, b.verify(t, fleet.VerifyOptions{Name: "api", Hosts: []string{"host1"}}), "host1", "api")
	if s.State != units.StateInactive || s.PortState != fleet.PortFree || s.Drift || s.Clean() {
		t.Fatalf("stopped unit: %+v", s)
	}
}

func TestVerifyNamesTheStageOfAnUnreachableHostAndRefusesAnIncompleteDeclarationsDrift(t *testing.T) {
	b := newVerifyBed(t)
	res := b.verify(t, fleet.VerifyOptions{})
	if len(res.Hosts) != 2 {
		t.Fatalf("%d hosts", len(res.Hosts))
	}
	down := res.Hosts[1]
	if down.Host != "down" || down.Reachable || down.Stage != fleet.StageConnect || down.Error == nil || len(down.Services) != 0 {
		t.Errorf("the closed port: %+v", down)
	}
	legacy := service(t, res, "host1", "legacy")
	if legacy.Refusal == nil || legacy.Refusal.Code != refusal.DeclarationIncomplete || legacy.State != units.StateMissing || legacy.Loaded {
		t.Errorf("incomplete declaration: %+v", legacy)
	}
	api := service(t, res, "host1", "api")
	if !api.FileAbsent || api.State != units.StateMissing {
		t.Errorf("never ensured: %+v", api)
	}
	if services, unreachable := res.Findings(); services != 2 || unreachable != 1 {
		t.Errorf("findings %d services, %d hosts", services, unreachable)
	}
	if _, err := b.fleet.Verify(context.Background(), fleet.VerifyOptions{Name: "nope"}, nil); !refusal.Is(err, refusal.NotFound) {
		t.Errorf("verify of an undeclared name: %v", err)
	}
	if _, err := b.fleet.Verify(context.Background(), fleet.VerifyOptions{Hosts: []string{"host9"}}, nil); !refusal.Is(err, refusal.NotFound) {
		t.Errorf("verify of an unknown host: %v", err)
	}
}

func TestPortOwnershipReadsTheDeclaredAddressOnly(t *testing.T) {
	mine := units.Listener{Address: "127.0.1.2", PID: 7, Unit: "api.service"}
	other := units.Listener{Address: "127.0.1.3"} // another host of one network namespace
	wild := units.Listener{Address: "0.0.0.0", PID: 9, Unit: "squatter.service"}
	for _, tc := range []struct {
		name    string
		address string
		ls      []units.Listener
		want    string
	}{
		{"own address", "127.0.1.2", []units.Listener{other, mine}, fleet.PortOwned},
		{"only another host's", "127.0.1.2", []units.Listener{other}, fleet.PortFree},
		{"a wildcard squatter", "127.0.1.2", []units.Listener{wild}, fleet.PortElsewhere},
		{"mine beside a squatter", "127.0.1.2", []units.Listener{wild, mine}, fleet.PortOwned},
		{"a name, not an address", "host2.lan", []units.Listener{other}, fleet.PortElsewhere},
		{"nothing", "127.0.1.2", nil, fleet.PortFree},
	} {
		if got, _ := fleet.PortOwnership("api.service", tc.address, tc.ls); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestVerifyStageTellsResolveConnectHandshakeKeyAuthAndCommandApart(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&channel.RemoteError{Host: "h", Stage: channel.StageConnect, Err: os.ErrNotExist}, fleet.StageResolve},
		{&channel.RemoteError{Host: "h", Address: "127.0.0.1:1", Stage: channel.StageConnect, Err: &netOpError}, fleet.StageConnect},
		{&channel.RemoteError{Host: "h", Address: "127.0.0.1:22", Stage: channel.StageConnect, Err: os.ErrClosed}, fleet.StageHandshake},
		// through the keeper a cause arrives as its message only
		{&channel.RemoteError{Host: "h", Address: "127.0.1.5:22", Stage: channel.StageConnect, Err: errors.New("dial tcp 127.0.1.5:22: connect: connection refused")}, fleet.StageConnect},
		{&channel.RemoteError{Host: "h", Address: "nohost.invalid:22", Stage: channel.StageConnect, Err: errors.New("dial tcp: lookup nohost.invalid: no such host")}, fleet.StageResolve},
		{&channel.RemoteError{Host: "h", Address: "127.0.1.5:22", Stage: channel.StageConnect, Err: errors.New("ssh: handshake failed: EOF")}, fleet.StageHandshake},
		{&channel.RemoteError{Host: "h", Address: "127.0.0.1:22", Stage: channel.StageHostKey, Err: os.ErrClosed}, fleet.StageHostKey},
		{&channel.RemoteError{Host: "h", Address: "127.0.0.1:22", Stage: channel.StageAuth, Err: os.ErrClosed}, fleet.StageAuth},
		{&channel.RemoteError{Host: "h", Address: "127.0.0.1:22", Stage: channel.StageRemoteExit, Err: os.ErrClosed}, fleet.StageCommand},
		{&channel.RemoteError{Host: "h", Address: "127.0.0.1:22", Stage: channel.StageRemoteRefusal, Err: refusal.New(refusal.UnknownVerb, "x")}, fleet.StageCommand},
	} {
		if got := fleet.VerifyStage(tc.err); got != tc.want {
			t.Errorf("%v: %s, want %s", tc.err, got, tc.want)
		}
	}
}

var netOpError = net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}

// BenchmarkVerifyOfAThousandHostsOfTwentyServices is one sweep over 1,000
// in-process hosts (local.Host over an in-memory manager, each unit
// installed and running, files rendered and compared for real), the fleet
// side of what the autonomy cycle plans from.
func BenchmarkVerifyOfAThousandHostsOfTwentyServices(b *testing.B) {
	const hosts, services = 1000, 20
	home := b.TempDir()
	mem := unitstest.NewMemory(home)
	h := &local.Host{GOOS: "linux", Home: home, ProcRoot: b.TempDir(),
		Manager: func(context.Context, string) (units.Manager, func(), error) { return mem, func() {}, nil }}
	doc := &registry.Document{Version: 1}
	var decl []registry.Service
	for i := 0; i < services; i++ {
		s := registry.Service{Name: fmt.Sprintf("svc%d", i), Unit: fmt.Sprintf("svc%d.service", i), Scope: registry.ScopeUser,
			Program: "/usr/local/bin/svc", Args: []string{"--n", strconv.Itoa(i)}}
		content, err := units.Render(s, "linux", home)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := mem.Install(context.Background(), s, content); err != nil {
			b.Fatal(err)
		}
		if err := mem.Start(context.Background(), s.Unit); err != nil {
			b.Fatal(err)
		}
		decl = append(decl, s)
	}
	for i := 0; i < hosts; i++ {
		doc.Targets = append(doc.Targets, registry.Target{Name: fmt.Sprintf("h%d", i), OS: "linux", Services: decl})
	}
	f := &fleet.Fleet{Doc: doc, Connect: func(registry.Target) channel.Host { return h }, Parallel: 16}
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		res, err := f.Verify(context.Background(), fleet.VerifyOptions{}, nil)
		if err != nil || len(res.Hosts) != hosts || !res.Clean() {
			b.Fatalf("%v: %d hosts, clean %v", err, len(res.Hosts), res.Clean())
		}
	}
}

func TestAReachOnlyVerifyProvesTheHostReachableAndReadsNothing(t *testing.T) {
	b := newVerifyBed(t)
	before := maps.Clone(b.mem.Calls)
	res := b.verify(t, fleet.VerifyOptions{ReachOnly: func(string) bool { return true }})
	up, down := res.Hosts[0], res.Hosts[1]
	if !up.Reachable || !up.ReachOnly || len(up.Services) != 0 {
		t.Errorf("the reachable host: %+v", up)
	}
	if down.Reachable || !down.ReachOnly || down.Stage != fleet.StageConnect {
		t.Errorf("the closed port: %+v", down)
	}
	if !maps.Equal(before, b.mem.Calls) {
		t.Errorf("a reach-only call read the init system: calls %v", b.mem.Calls)
	}
	// only the hosts named reach-only: the others are read in full
	res = b.verify(t, fleet.VerifyOptions{ReachOnly: func(h string) bool { return h == "down" }})
	if res.Hosts[0].ReachOnly || len(res.Hosts[0].Services) != 2 {
		t.Errorf("host1 asked in full: %+v", res.Hosts[0])
	}
}
