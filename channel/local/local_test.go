package local_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/channel/local"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/units"
)

// refusedHost is a local.Host whose manager must never be reached: the
// cases here are refused before any init system is touched.
func refusedHost(t *testing.T, home string) *local.Host {
	return &local.Host{GOOS: "linux", Home: home, Manager: func(context.Context, string) (units.Manager, func(), error) {
		t.Error("the init system was reached for a call that should have been refused")
		return nil, nil, errors.New("refused call reached the init system")
	}}
}

func code(err error) refusal.Code {
	c, _ := refusal.CodeOf(err)
	return c
}

func TestUnitInstallRefusesWhatTheGrammarCannotKnow(t *testing.T) {
	h := refusedHost(t, "/home/alice")
	unit := []byte("[Service]\nExecStart=/bin/true\n")
	for _, tc := range []struct {
		name        string
		scope, path string
		content     []byte
		code        refusal.Code
	}{
		// another user's home
		{"other home", "user", "/home/bob/.config/systemd/user/x.service", unit, refusal.InvalidPath},
		// a home that is a prefix of another
		{"prefix home", "user", "/home/alice2/.config/systemd/user/x.service", unit, refusal.InvalidPath},
		// a property list sent to systemd
		{"plist on linux", "system", "/etc/systemd/system/x.service", []byte(`<?xml version="1.0"?><plist><dict/></plist>`), refusal.InvalidContent},
		// bytes that are no unit at all
		{"garbage", "system", "/etc/systemd/system/x.service", []byte("[Service\nExecStart=/bin/true\n"), refusal.InvalidContent},
		// a path outside every unit directory
		{"elsewhere", "system", "/tmp/x.service", unit, refusal.InvalidPath},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.UnitInstall(context.Background(), channel.InstallRequest{UnitRef: channel.UnitRef{Scope: tc.scope, Unit: "x.service"}, Path: tc.path, Content: tc.content})
			if got := code(err); got != tc.code {
				t.Errorf("UnitInstall: %v (code %q), want code %s", err, got, tc.code)
			}
		})
	}
	_, err := h.UnitRemove(context.Background(), channel.RemoveRequest{UnitRef: channel.UnitRef{Scope: "user", Unit: "x.service"}, Path: "/root/.config/systemd/user/x.service"})
	if code(err) != refusal.InvalidPath {
		t.Errorf("UnitRemove outside the home: %v", err)
	}
}

func TestEnsureOnAnotherOSIsRefusedBeforeTheInitSystem(t *testing.T) {
	h := refusedHost(t, t.TempDir())
	req := channel.EnsureRequest{OS: "darwin", Mode: channel.ModeApply}
	req.Service.Name, req.Service.Unit, req.Service.Program = "api", "api.service", "/bin/api"
	if _, err := h.Ensure(context.Background(), req); code(err) != refusal.OSMismatch {
		t.Errorf("ensure for darwin on linux: %v", err)
	}
}

// stepHost is a local.Host whose catalog is the shipped one extended by
// site steps, running them with the one step runner of package repair.
func stepHost(t *testing.T, site string) *local.Host {
	t.Helper()
	ext, err := catalog.Parse([]byte(site), "site.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Shipped().Extend(ext)
	if err != nil {
		t.Fatal(err)
	}
	h := &local.Host{GOOS: "linux", Home: t.TempDir()}
	h.Catalog = func(context.Context) (*catalog.Catalog, error) { return cat, nil }
	h.RunStep = (&local.StepRunner{OS: "linux", Home: h.Home}).Run
	return h
}

func env(pairs ...string) []channel.EnvVar {
	var out []channel.EnvVar
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, channel.EnvVar{Name: pairs[i], Value: pairs[i+1]})
	}
	return out
}

func TestRepairStepRunsItsArgvWithOnlyTheDeclaredEnvironment(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	h := stepHost(t, `version: 1
steps:
  show-env:
    needs: [WITHIN_SECONDS]
    linux: {argv: [/usr/bin/env], env: {FIXED: "yes"}, timeout_seconds: 5}
  touch-marker:
    linux: {argv: [/usr/bin/touch, `+marker+`], timeout_seconds: 5}
  fails:
    linux: {argv: [/bin/ls, /nonexistent-stado-path], timeout_seconds: 5}
`)
	t.Setenv("STADO_TEST_SECRET", "must-not-leak")
	ctx := context.Background()
	res, err := h.RepairStep(ctx, channel.StepRequest{Step: "show-env", Env: env("WITHIN_SECONDS", "7")})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"WITHIN_SECONDS=7", "FIXED=yes", "PATH=" + units.PathLinux, "HOME=" + h.Home} {
		if !slices.Contains(strings.Split(res.Output, "\n"), want) {
			t.Errorf("payload environment lacks %s:\n%s", want, res.Output)
		}
	}
	if strings.Contains(res.Output, "must-not-leak") {
		t.Errorf("the payload inherited the caller's environment:\n%s", res.Output)
	}
	// a name the step does not declare: refused, nothing runs
	if _, err := h.RepairStep(ctx, channel.StepRequest{Step: "touch-marker", Env: env("WITHIN_SECONDS", "7")}); code(err) != refusal.InvalidEnv {
		t.Errorf("undeclared name: %v", err)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused step ran: %v", err)
	}
	// a needed name missing
	if _, err := h.RepairStep(ctx, channel.StepRequest{Step: "show-env"}); code(err) != refusal.InputMissing {
		t.Errorf("missing input: %v", err)
	}
	// an unknown step
	if _, err := h.RepairStep(ctx, channel.StepRequest{Step: "no-such-step"}); code(err) != refusal.NotFound {
		t.Errorf("unknown step: %v", err)
	}
	// a payload that exits nonzero is a result with its exit code and output
	res, err = h.RepairStep(ctx, channel.StepRequest{Step: "fails"})
	if err != nil || res.OK || res.ExitCode == nil || *res.ExitCode == 0 || res.Code != string(refusal.StepFailed) || !strings.Contains(res.Output, "nonexistent-stado-path") {
		t.Errorf("failing payload: %+v %v", res, err)
	}
	if _, err := h.RepairStep(ctx, channel.StepRequest{Step: "touch-marker"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the step did not run: %v", err)
	}
}

func TestPortOwnerFindsTheProcessListening(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	h := &local.Host{}
	r, err := h.PortOwner(context.Background(), port)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Listeners) != 1 {
		t.Fatalf("listeners on %d: %+v", port, r.Listeners)
	}
	l := r.Listeners[0]
	if l.Address != "127.0.0.1" || l.PID != os.Getpid() || l.Program == "" {
		t.Errorf("listener %+v, want 127.0.0.1 held by pid %d", l, os.Getpid())
	}
	ln.Close()
	if _, err := h.PortOwner(context.Background(), port); code(err) != refusal.NotFound {
		t.Errorf("a closed port: %v", err)
	}
}
