package local_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/channel/local"
	"github.com/wisent/stado/declaration"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/units"
	"github.com/wisent/stado/units/unitstest"
)

// Verify reads a declaration's service-protocol executable's ready answer
// (the real fixture implementing the seven operations), and names the
// operation when the answer cannot be read.
func TestVerifyCarriesTheProtocolsReadyAnswer(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "service-protocol")
	if out, err := exec.Command("go", "build", "-o", bin, "../../tests/fixtures/service-protocol").CombinedOutput(); err != nil {
		t.Fatalf("build the fixture: %v\n%s", err, out)
	}
	home, state := t.TempDir(), t.TempDir()
	mem := unitstest.NewMemory(home)
	h := &local.Host{GOOS: "linux", Home: home, Manager: func(context.Context, string) (units.Manager, func(), error) { return mem, func() {}, nil }}
	svc := registry.Service{Name: "worker", Unit: "worker.service", Scope: "user", Program: "/usr/local/bin/worker",
		Env: map[string]string{"FIXTURE_STATE": state}, Protocol: &declaration.ServiceProtocol{Exec: []string{bin}}}
	read := func() *channel.ProtocolReading {
		t.Helper()
		res, err := h.Verify(context.Background(), channel.VerifyRequest{OS: "linux", Services: []channel.VerifyService{{Service: svc}}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Units[0].Protocol
	}
	os.WriteFile(filepath.Join(state, "running"), nil, 0o644)
	os.WriteFile(filepath.Join(state, "ready"), []byte("false"), 0o644)
	if p := read(); p == nil || p.Ready == nil || *p.Ready || !*p.Running {
		t.Fatalf("ready false: %+v", p)
	}
	os.WriteFile(filepath.Join(state, "ready"), []byte("true"), 0o644)
	if p := read(); p == nil || p.Ready == nil || !*p.Ready {
		t.Fatalf("ready true: %+v", p)
	}
	os.WriteFile(filepath.Join(state, "answer"), []byte("malformed"), 0o644)
	if p := read(); p == nil || p.Op != "ready" || !strings.Contains(p.Cause, "JSON") || p.Ready != nil {
		t.Fatalf("malformed: %+v", p)
	}
	svc.Protocol = nil
	if p := read(); p != nil {
		t.Fatalf("no protocol declared, yet a reading: %+v", p)
	}
}
