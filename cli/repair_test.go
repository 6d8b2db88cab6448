package cli

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
	"github.com/wisent/stado/register"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/repair"
	"github.com/wisent/stado/store"
)

// repairFleet stores a registry with one skarbiec service on h1 and,
// when refresh > 0, a refresh interval; it returns the store dir.
func repairFleet(t *testing.T, refresh int) string {
	t.Helper()
	dir := t.TempDir()
	st, err := store.OpenFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	doc := &registry.Document{Version: 1, ServiceResolver: registry.ServiceResolver{RefreshSeconds: refresh},
		Targets: []registry.Target{{Name: "h1", OS: registry.OSLinux, SSH: registry.SSH{Address: "127.0.1.1"},
			Services: []registry.Service{{Name: "skarbiec", Unit: "skarbiec.service", Program: "/usr/local/bin/skarbiec", Product: "skarbiec"}}}}}
	if _, err := registry.Push(context.Background(), st, doc, 0, "test"); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestRepairWithoutApplyShowsWhatWouldRunAndRunsNothing(t *testing.T) {
	dir := repairFleet(t, 12)
	code, out, errOut := runRegistryCLI(t, dir, "repair", "skarbiec", "--step", "crypto", "--target", "h1", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var d repair.StepPlan
	decodeDoc(t, out, "stado.repair.plan", &d)
	if d.Applied || d.Argv[0] != "/usr/local/bin/skarbiec" || d.Env["SKARBIEC_READY_WITHIN_SECONDS"] != "12" || d.Timeout != 120 {
		t.Errorf("plan %+v", d)
	}
	code, out, _ = runRegistryCLI(t, dir, "repair", "skarbiec", "--step", "crypto", "--target", "h1")
	if code != 0 || !strings.Contains(out, "would run repair step crypto") || !strings.Contains(out, "add --apply") {
		t.Errorf("text plan (exit %d): %s", code, out)
	}
}

func TestRepairCryptoWithoutRefreshIntervalIsRefusedNamingTheVariable(t *testing.T) {
	dir := repairFleet(t, 0)
	code, _, errOut := runRegistryCLI(t, dir, "repair", "skarbiec", "--step", "crypto", "--target", "h1", "--json")
	if code != ExitRefused || !strings.Contains(errOut, "repair_input_missing") || !strings.Contains(errOut, "SKARBIEC_READY_WITHIN_SECONDS") {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
}

func TestRepairRefusesUnknownTargetServiceAndStep(t *testing.T) {
	dir := repairFleet(t, 5)
	cases := []struct {
		name string
		args []string
		want string
	}{
		// no such host
		{"target", []string{"repair", "skarbiec", "--step", "crypto", "--target", "nowhere"}, "not_found"},
		// neither declared nor in the catalog
		{"service", []string{"repair", "nothing-here", "--step", "crypto", "--target", "h1"}, "not_found"},
		// the repair catalog has no such step
		{"step", []string{"repair", "skarbiec", "--step", "no-such-step", "--target", "h1"}, "repair_step_unknown"},
	}
	for _, c := range cases {
		code, _, errOut := runRegistryCLI(t, dir, append(c.args, "--json")...)
		if code != ExitRefused || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d, stderr %s", c.name, code, errOut)
		}
	}
	// the host step runs the fixed recovery list, stado itself need not be declared
	if code, out, errOut := runRegistryCLI(t, dir, "repair", "stado", "--step", "host", "--target", "h1"); code != 0 || !strings.Contains(out, "systemctl restart stado.service") {
		t.Errorf("host step: exit %d: %s %s", code, out, errOut)
	}
}

func TestRepairApplyRunsTheStepThroughTheTargetsHost(t *testing.T) {
	dir := repairFleet(t, 5)
	marker := filepath.Join(t.TempDir(), "marker")
	os.WriteFile(marker, nil, 0o600)
	site := "version: 1\nsteps:\n  unmark:\n    linux: {argv: [/bin/rm, -f, " + marker + "], timeout_seconds: 5}\n  broken:\n    linux: {argv: [/bin/false], timeout_seconds: 5}\n"
	st, _ := store.OpenFileStore(dir)
	if _, err := st.Put(context.Background(), store.CatalogKey, []byte(site), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Load(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	env, out, _ := repairTestEnv(t, dir)
	// this machine's end stands in for h1's channel: the same step runner
	h1 := local.New(t.TempDir(), "", "test")
	h1.Catalog = func(context.Context) (*catalog.Catalog, error) { return cat, nil }
	ex := func(registry.Target) channel.Host { return h1 }
	if err := runRepair(context.Background(), env, repairOptions{Service: "skarbiec", Step: "unmark", Target: "h1", Apply: true, Connect: ex}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Errorf("the step did not run: %v", err)
	}
	if !strings.Contains(out.String(), "ran repair step unmark") || !strings.Contains(out.String(), "result:  ok") {
		t.Errorf("output %s", out)
	}
	err = runRepair(context.Background(), env, repairOptions{Service: "skarbiec", Step: "broken", Target: "h1", Apply: true, Connect: ex})
	if c, m := exitCode(err); c != ExitRefused || m != repair.CodeStepFailed {
		t.Errorf("failing step: %v (%d %s)", err, c, m)
	}
}

func TestServiceRecoveriesReadsThisMachinesRegister(t *testing.T) {
	home := t.TempDir()
	// a missing register holds no recovery
	code, out, errOut := runRegistryCLI(t, home, "service", "recoveries", "--json")
	if code != 0 || !strings.Contains(out, `"recoveries": []`) {
		t.Fatalf("missing register: exit %d %s %s", code, out, errOut)
	}
	reg := register.Home(home)
	for _, s := range []string{"skarbiec", "brama"} {
		rec := register.Recovery{When: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), Service: s, Host: "h1", Unit: s + ".service",
			Restart: &register.Restart{Unit: s + ".service", OK: true, Answer: "done", PID: 42}, Complete: true}
		if err := reg.Append(rec); err != nil {
			t.Fatal(err)
		}
	}
	code, out, _ = runRegistryCLI(t, home, "service", "recoveries", "--service", "brama", "--json")
	var d register.Listing
	if decodeDoc(t, out, "stado.service.recoveries", &d); code != 0 || len(d.Recoveries) != 1 || d.Recoveries[0].Service != "brama" {
		t.Fatalf("exit %d: %s", code, out)
	}
	code, out, _ = runRegistryCLI(t, home, "service", "recoveries")
	if code != 0 || !strings.Contains(out, "skarbiec on h1") || !strings.Contains(out, "restart brama.service: done, pid 42") {
		t.Errorf("text: %s", out)
	}
	// a line that is not a recovery is refused naming file and line
	f, _ := os.OpenFile(reg.Path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("{oops\n")
	f.Close()
	code, _, errOut = runRegistryCLI(t, home, "service", "recoveries", "--json")
	if code != ExitRefused || !strings.Contains(errOut, "register_unreadable") || !strings.Contains(errOut, reg.Path+":3") {
		t.Errorf("malformed: exit %d %s", code, errOut)
	}
}

// testEnv returns an Env on the file store in dir with HOME=dir.
func repairTestEnv(t *testing.T, dir string) (*Env, *strings.Builder, *strings.Builder) {
	t.Helper()
	var out, errb strings.Builder
	env := NewEnv(strings.NewReader(""), &out, &errb)
	env.Getenv = func(k string) string {
		if k == "HOME" {
			return dir
		}
		return ""
	}
	env.StoreURL = "file://" + dir
	return env, &out, &errb
}
