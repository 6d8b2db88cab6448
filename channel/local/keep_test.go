package local_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/channel/local"
	"github.com/wisent/stado/units"
	"github.com/wisent/stado/units/unitstest"
)

// Ensuring the stado host process over a unit an operator tuned keeps the
// installed limits (LimitNOFILE=65536, MemoryMax=2G) while ExecStart and
// the environment become the catalog's; a second ensure changes nothing and
// verify reads no drift.
func TestEnsureOfTheHostProcessKeepsTheInstalledLimits(t *testing.T) {
	home := t.TempDir()
	mem := unitstest.NewMemory(home)
	h := &local.Host{GOOS: "linux", Home: home, Manager: func(context.Context, string) (units.Manager, func(), error) { return mem, func() {}, nil }}
	prod, ok := catalog.Shipped().Lookup("stado")
	if !ok {
		t.Fatal("no stado product in the shipped catalog")
	}
	s := prod.Declaration("linux", "user")
	s.Env = map[string]string{"STADO_STORE": "file:///var/lib/stado/store"}
	path := filepath.Join(home, ".config/systemd/user/stado.service")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	installed := "[Unit]\nDescription=stado\n\n[Service]\nExecStart=/opt/old/stado host run\nLimitNOFILE=65536\nMemoryMax=2G\n"
	if err := os.WriteFile(path, []byte(installed), 0o644); err != nil {
		t.Fatal(err)
	}
	ensure := func() channel.EnsureResult {
		t.Helper()
		res, err := h.Ensure(context.Background(), channel.EnsureRequest{OS: "linux", Service: s, Mode: channel.ModeApply})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := ensure(); res.Install != units.ActionUpdated {
		t.Errorf("first ensure: install %q, want updated", res.Install)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"LimitNOFILE=65536\n", "MemoryMax=2G\n", "ExecStart=/usr/local/bin/stado host run\n", "STADO_STORE=file:///var/lib/stado/store"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("want %q in the rewritten unit:\n%s", want, got)
		}
	}
	if strings.Contains(string(got), "/opt/old") {
		t.Errorf("the old ExecStart survived:\n%s", got)
	}
	if res := ensure(); res.Install != units.ActionUnchanged {
		t.Errorf("second ensure: install %q, want unchanged", res.Install)
	}
	v, err := h.Verify(context.Background(), channel.VerifyRequest{OS: "linux", Services: []channel.VerifyService{{Service: s}}})
	if err != nil {
		t.Fatal(err)
	}
	if u := v.Units[0]; u.Drift {
		t.Errorf("verify reads drift over the kept limits:\n%s", u.Diff)
	}
}

// An applied, confirmed ensure that asks for its serving read answers it
// in the same call, as verify reads the unit and its port; a plan does not.
func TestEnsureAnswersItsServingReadInTheSameCall(t *testing.T) {
	home := t.TempDir()
	mem := unitstest.NewMemory(home)
	h := &local.Host{GOOS: "linux", Home: home, Manager: func(context.Context, string) (units.Manager, func(), error) { return mem, func() {}, nil }}
	req := channel.EnsureRequest{OS: "linux", Mode: channel.ModeApply, Settle: time.Millisecond, Serving: &channel.ServingPort{Port: 18399, Address: "127.0.0.1"}}
	req.Service.Name, req.Service.Unit, req.Service.Program = "api", "api.service", "/usr/local/bin/api"
	res, err := h.Ensure(context.Background(), req)
	if err != nil || !res.Confirmed {
		t.Fatalf("ensure %+v, %v", res, err)
	}
	c := res.Serving
	if c == nil || c.Unit != "api.service" || c.Port != 18399 || c.Address != "127.0.0.1" || c.Verdict.PID == 0 || c.Drift {
		t.Fatalf("serving reading %+v, want the unit's verify reading with its port", c)
	}
	req.Mode = channel.ModePlan
	if res, err := h.Ensure(context.Background(), req); err != nil || res.Serving != nil {
		t.Errorf("a plan answered serving %+v (%v)", res.Serving, err)
	}
}
