package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/register"
	"github.com/wisent/stado/repair"
	"github.com/wisent/stado/tests/testbed"
)

// The remote register journey: host2's recovery register (rows written by
// repair's own register code, appended after whatever host2 already
// holds) read from the workstation with `stado service recoveries --host
// host2 --json`, over SSH through the channel's recoveries verb, is the
// register host2 reads locally with `stado service recoveries --json`:
// the same file and the same rows, whole or filtered by --service.

const recoveriesFleet = `version: 1
targets:
  - name: %[1]s
    ssh: {address: %[2]s, port: 22, user: root}
    os: linux
`

func TestHost2sRegisterReadFromTheWorkstationMatchesWhatHost2ReadsLocally(t *testing.T) {
	t.Parallel()
	bed := testbed.Shared(t, 2)
	bin := testbed.BuildStado(t)
	bed.InstallStado(t, bin)
	h2 := bed.Host(2)
	ctx := context.Background()
	store := "file://" + bed.NewStore(t)
	c := newCLI(t, bed, store)
	fleet := filepath.Join(t.TempDir(), "fleet.yaml")
	os.WriteFile(fleet, []byte(fmt.Sprintf(recoveriesFleet, h2.Name, h2.Addr)), 0o644)
	c.mustRun(t, "registry", "push", fleet, "--reason", "recoveries journey")

	// host2's register: what it holds, then two rows of ours.
	const regPath = "/root/" + register.HomeFile
	before, readErr := bed.ReadFile(h2, regPath)
	t.Cleanup(func() {
		if readErr == nil {
			bed.WriteFile(h2, regPath, before, 0o600)
		} else {
			bed.Exec(ctx, h2, "rm", "-f", regPath)
		}
	})
	at := time.Now().UTC().Truncate(time.Second)
	exit := 0
	local := register.Home(t.TempDir())
	for _, r := range []register.Recovery{
		{State: register.Attempted, When: at, Service: "rj-vault", Host: h2.Name, Unit: "rj-vault.service", Scope: "system",
			Question:    register.Question{Method: "GET", Path: "/readyz", Endpoint: h2.Addr + ":19501", Repair: []string{"rj-step"}},
			Declaration: &catalog.Answering{Method: "GET", Path: "/readyz", Repair: []string{"rj-step"}},
			Since:       at.Add(-5 * time.Second), WaitedSeconds: 5, BoundSeconds: 2,
			Steps:   []register.StepResult{{Step: "rj-step", Host: h2.Name, Argv: []string{"/bin/true"}, OK: true, ExitCode: &exit, At: at, ElapsedMS: 3}},
			Restart: &register.Restart{Host: h2.Name, Unit: "rj-vault.service", Scope: "system", OK: true, Answer: "done", PID: 4242, At: at, ElapsedMS: 40},
			Alerts:  []register.AlertOutcome{{Channel: "ops", Type: "webhook", OK: false, Answer: "HTTP 502", Cause: "bad gateway"}}, Complete: true},
		{State: register.Attempted, When: at.Add(time.Minute), Service: "rj-gate", Host: "host3", Unit: "rj-gate.service",
			Question: register.Question{Method: "POST", Path: "/v1/chat/completions", Body: json.RawMessage(`{"q":"ping"}`), Endpoint: "127.0.1.3:19502", Repair: []string{}},
			Since:    at, WaitedSeconds: 61, BoundSeconds: 2, HeldRequests: 3,
			Steps: []register.StepResult{}, Restart: &register.Restart{Host: "host3", Unit: "rj-gate.service", Scope: "system", Code: repair.CodeRestartFailed, Refusal: "job failed", At: at},
			Alerts: []register.AlertOutcome{}, ObservedBy: h2.Name},
	} {
		if err := local.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	ours, err := os.ReadFile(local.Path)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := bed.Exec(ctx, h2, "mkdir", "-p", "/root/.stado"); err != nil {
		t.Fatal(err)
	}
	if err := bed.WriteFile(h2, regPath, append(append([]byte(nil), before...), ours...), 0o600); err != nil {
		t.Fatal(err)
	}

	type doc struct {
		Kind       string            `json:"kind"`
		Host       string            `json:"host"`
		File       string            `json:"file"`
		Recoveries []json.RawMessage `json:"recoveries"`
	}
	decode := func(where, out string) doc {
		t.Helper()
		var d doc
		if err := json.Unmarshal([]byte(out), &d); err != nil || d.Kind != "stado.service.recoveries" {
			t.Fatalf("%s: %v\n%s", where, err, out)
		}
		return d
	}
	generic := func(rows []json.RawMessage) []any {
		out := make([]any, len(rows))
		for i, r := range rows {
			if err := json.Unmarshal(r, &out[i]); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	for _, filter := range [][]string{nil, {"--service", "rj-gate"}} {
		remoteOut := c.mustRun(t, append([]string{"service", "recoveries", "--host", h2.Name, "--json"}, filter...)...)
		localOut, errOut, err := bed.SSH(ctx, h2, append([]string{"stado", "service", "recoveries", "--json"}, filter...)...)
		if err != nil {
			t.Fatalf("on %s: %v\n%s", h2.Name, err, errOut)
		}
		remote, onHost := decode("workstation", remoteOut), decode(h2.Name, localOut)
		if remote.Host != h2.Name || remote.File != onHost.File || remote.File != regPath {
			t.Errorf("%v: workstation reads %s on %s, host2 reads %s", filter, remote.File, remote.Host, onHost.File)
		}
		if !reflect.DeepEqual(generic(remote.Recoveries), generic(onHost.Recoveries)) {
			t.Errorf("%v: the rows differ\nworkstation: %s\n%s: %s", filter, remoteOut, h2.Name, localOut)
		}
		want := 2
		if filter != nil {
			want = 1
		}
		var mine int
		for _, r := range generic(remote.Recoveries) {
			if s := r.(map[string]any)["service"]; s == "rj-vault" || s == "rj-gate" {
				mine++
			}
		}
		if mine != want {
			t.Errorf("%v: %d of our rows read, want %d", filter, mine, want)
		}
	}
	// The text form names the row as the host's own command does.
	code, out, errOut := c.run(t, "service", "recoveries", "--host", h2.Name, "--service", "rj-vault")
	if code != 0 || !strings.Contains(out, "rj-vault on "+h2.Name) {
		t.Errorf("text: exit %d\n%s\n%s", code, out, errOut)
	}
}
