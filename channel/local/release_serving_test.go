package local

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wisent/stado/declaration"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/units"
)

// procWith is a /proc fixture in which pid 42 of unit listens on
// 127.0.0.1:8080.
func procWith(t *testing.T, unit string) string {
	t.Helper()
	root := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("net/tcp", "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"+
		"   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 12345 1 0000000000000000 100 0 0 10 0\n")
	write("42/comm", "brama\n")
	write("42/cgroup", "0::/system.slice/"+unit+"\n")
	if err := os.MkdirAll(filepath.Join(root, "42", "fd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("socket:[12345]", filepath.Join(root, "42", "fd", "3")); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestTheReleaseServingReadIsThePortOwnershipOfServiceServing(t *testing.T) {
	for _, tc := range []struct {
		name    string
		owner   string // the unit whose process listens
		address string
		serving bool
		phrase  string
	}{
		// the unit's own process on the declared address
		{"owned", "brama.service", "127.0.0.1", true, "brama.service owns 127.0.0.1 port 8080 (pid 42, brama)"},
		// another unit holds the port
		{"elsewhere", "other.service", "127.0.0.1", false, "held by pid 42 (brama), not by brama.service"},
		// the unit listens on another address than the declared one
		{"other address", "brama.service", "127.0.1.2", false, "nothing listens on 127.0.1.2 port 8080"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &Host{GOOS: "linux", ProcRoot: procWith(t, tc.owner)}
			r, err := h.releaseServing(context.Background(), "system", "brama.service", 8080, tc.address)
			if err != nil || r.Serving != tc.serving || !strings.Contains(r.Sentence, tc.phrase) {
				t.Fatalf("reading %+v %v, want serving %v saying %q", r, err, tc.serving, tc.phrase)
			}
		})
	}
}

// Where the declaration names a service-protocol executable, the
// activation's serving read also needs its ready operation to say ready
// (the real fixture implementing the protocol's operations).
func TestTheReleaseServingReadNeedsReadyWhereAProtocolIsDeclared(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "service-protocol")
	if out, err := exec.Command("go", "build", "-o", bin, "../../tests/fixtures/service-protocol").CombinedOutput(); err != nil {
		t.Fatalf("build the fixture: %v\n%s", err, out)
	}
	state := t.TempDir()
	h := &Host{GOOS: "linux", Home: t.TempDir(), ProcRoot: procWith(t, "brama.service")}
	svc := registry.Service{Name: "brama", Unit: "brama.service", Program: "/usr/local/bin/brama",
		Env: map[string]string{"FIXTURE_STATE": state}, Protocol: &declaration.ServiceProtocol{Exec: []string{bin}}}
	read := h.readyServing(h.releaseServing, svc)
	os.WriteFile(filepath.Join(state, "running"), nil, 0o644)
	os.WriteFile(filepath.Join(state, "ready"), []byte("false"), 0o644)
	if r, err := read(context.Background(), "system", "brama.service", 8080, "127.0.0.1"); err != nil || r.Serving || !strings.Contains(r.Sentence, "not ready") {
		t.Fatalf("owned but not ready: %+v %v, want not serving", r, err)
	}
	os.WriteFile(filepath.Join(state, "ready"), []byte("true"), 0o644)
	if r, err := read(context.Background(), "system", "brama.service", 8080, "127.0.0.1"); err != nil || !r.Serving || !strings.Contains(r.Sentence, "says ready") {
		t.Fatalf("owned and ready: %+v %v, want serving", r, err)
	}
}

// testdataRunner answers argv (joined by spaces) with a file of
// units/testdata.
type testdataRunner map[string]string

func (r testdataRunner) Run(_ context.Context, argv []string) ([]byte, error) {
	f, ok := r[strings.Join(argv, " ")]
	if !ok {
		return nil, &units.ExitError{Argv: argv, Code: 1}
	}
	return os.ReadFile(filepath.Join("..", "..", "units", "testdata", f))
}

// On darwin the activation's serving read takes the job's main pid from
// launchctl print and counts the sockets of its process tree: here a
// shell's child node holds the port.
func TestTheReleaseServingReadOnDarwinCountsTheJobsProcessTree(t *testing.T) {
	r := testdataRunner{
		"/bin/launchctl print system/com.example.wrapped":                      "launchctl/running-system-wrapper-sh.txt",
		strings.Join(append([]string{units.LsofPath}, units.LsofArgs...), " "): "lsof/field-wrapper-child-listens.txt",
		strings.Join(append([]string{units.PsPath}, units.PsArgs...), " "):     "ps/axo-wrapper-child.txt",
	}
	h := &Host{GOOS: registry.OSDarwin, Home: t.TempDir(), Ports: units.LsofPorts{Runner: r},
		Manager: func(_ context.Context, scope string) (units.Manager, func(), error) {
			return units.LaunchdFor(r, scope, "", units.Account{Name: "root", Home: "/var/root"}), func() {}, nil
		}}
	got, err := h.releaseServing(context.Background(), registry.ScopeSystem, "com.example.wrapped", 8080, "127.0.0.1")
	if err != nil || !got.Serving || !strings.Contains(got.Sentence, "com.example.wrapped owns 127.0.0.1 port 8080 (pid 713, node)") {
		t.Fatalf("reading %+v %v", got, err)
	}
	got, err = h.releaseServing(context.Background(), registry.ScopeSystem, "com.example.wrapped", 5432, "127.0.0.1")
	if err != nil || got.Serving || !strings.Contains(got.Sentence, "held by pid 901 (postgres)") {
		t.Fatalf("postgres's port: %+v %v", got, err)
	}
}
