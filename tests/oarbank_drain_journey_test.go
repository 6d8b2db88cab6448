package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/tests/testbed"
)

// The Oarbank journey's hand-written variant: a declaration written by
// hand that names the product (`product: oarbank-agent`) and none of the
// catalog's unit settings is ensured on host1; it renders with the
// product's Delegate=yes and KillMode=process, so a restart keeps the
// workload; `service retire` runs the product's drain step first, so the
// workload is gone after retire and the output says the drain's result.
//
// It does not call t.Parallel: it runs, and cleans up, before the parallel
// Oarbank journey puts the agent's unit on the same hosts.
const obHandWritten = `version: 1
targets:
  - name: %[1]s
    ssh: {address: %[2]s, port: 22, user: root}
    os: linux
    services:
      - name: ob-agent
        unit: oarbank-agent.service
        product: oarbank-agent
        program: /usr/local/bin/oarbank-agent
        args: [run]
        env: {OARBANK_COORDINATOR: "http://127.0.0.1:9/", OARBANK_HOME: /var/tmp/oarbank-hw, OARBANK_LISTEN: "127.0.0.1:%[3]d"}
`

func TestOarbankHandWrittenAgentRestartsKeepingItsWorkloadAndRetireDrainsIt(t *testing.T) {
	bed := testbed.Shared(t, 3)
	bin := testbed.BuildStado(t)
	bed.InstallStado(t, bin)
	ctx := context.Background()
	h := bed.Hosts()[0]
	const port = 7461
	dst := filepath.Join(bed.BinDir(), "oarbank-agent")
	if out, err := exec.Command("go", "build", "-o", dst, "./fixtures/oarbank-agent").CombinedOutput(); err != nil {
		t.Fatalf("build the agent fixture: %v\n%s", err, out)
	}
	bed.InstallBin(t, dst)
	storeDir := bed.NewStore(t)
	c := newCLI(t, bed, "file://"+storeDir)
	fleet := filepath.Join(t.TempDir(), "fleet.yaml")
	os.WriteFile(fleet, []byte(fmt.Sprintf(obHandWritten, h.Name, h.Addr, port)), 0o644)
	c.mustRun(t, "registry", "push", fleet, "--reason", "a hand-written agent")

	workloadPID := 0
	t.Cleanup(func() {
		bed.Exec(ctx, h, "systemctl", "disable", "--now", "oarbank-agent.service")
		bed.Exec(ctx, h, "rm", "-f", "/etc/systemd/system/oarbank-agent.service")
		if workloadPID > 0 {
			bed.Exec(ctx, h, "kill", strconv.Itoa(workloadPID))
		}
		bed.Exec(ctx, h, "systemctl", "daemon-reload")
		bed.Exec(ctx, h, "systemctl", "reset-failed", "oarbank-agent.service") // this journey's unit only
		bed.Exec(ctx, h, "rm", "-rf", "/var/tmp/oarbank-hw")
	})

	c.mustRun(t, "service", "ensure", "ob-agent", "--host", h.Name, "--reason", "the agent")
	show, _, err := bed.Exec(ctx, h, "systemctl", "show", "-p", "Delegate,KillMode", "oarbank-agent.service")
	if err != nil || !strings.Contains(show, "Delegate=yes") || !strings.Contains(show, "KillMode=process") {
		t.Fatalf("the hand-written declaration's unit: %q, %v; want the product's Delegate=yes and KillMode=process", show, err)
	}
	workloads := func() (obWorkloads, error) {
		var w obWorkloads
		cl := &http.Client{Timeout: 2 * time.Second}
		resp, err := cl.Get(fmt.Sprintf("http://127.0.0.1:%d/v1/workloads", port))
		if err != nil {
			return w, err
		}
		defer resp.Body.Close()
		return w, json.NewDecoder(resp.Body).Decode(&w)
	}
	var first obWorkloads
	eventually(t, 30*time.Second, "the agent runs its workload", func() (bool, string) {
		w, err := workloads()
		first = w
		return err == nil && len(w.Workloads) == 1 && w.Workloads[0].State == "running", fmt.Sprintf("%+v %v", w, err)
	})
	workloadPID = first.Workloads[0].PID

	// a restart keeps the workload: a new agent adopts it
	c.mustRun(t, "service", "restart", "ob-agent", "--host", h.Name)
	eventually(t, 30*time.Second, "a new agent adopts the workload", func() (bool, string) {
		w, err := workloads()
		ok := err == nil && w.AgentPID != first.AgentPID && len(w.Workloads) == 1 &&
			w.Workloads[0].PID == workloadPID && w.Workloads[0].State == "running" && w.Workloads[0].Adopted
		return ok, fmt.Sprintf("%+v %v", w, err)
	})
	if _, _, err := bed.Exec(ctx, h, "kill", "-0", strconv.Itoa(workloadPID)); err != nil {
		t.Fatalf("workload pid %d stopped across the restart: %v", workloadPID, err)
	}

	// retire drains first: the workload is gone, the output says so
	out := c.mustRun(t, "service", "retire", "ob-agent", "--host", h.Name, "--reason", "the node leaves Oarbank", "--json")
	var res struct {
		Drain struct {
			Step   string `json:"step"`
			State  string `json:"state"`
			Result struct {
				OK     bool   `json:"ok"`
				Output string `json:"output"`
			} `json:"result"`
		} `json:"drain"`
		Removed bool `json:"unit_file_removed"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("retire --json: %v\n%s", err, out)
	}
	if res.Drain.Step != "oarbank-drain" || res.Drain.State != "drained" || !res.Drain.Result.OK ||
		!strings.Contains(res.Drain.Result.Output, fmt.Sprintf("pid %d stopped (WORKLOAD_NODE_NOT_ACTIVE)", workloadPID)) || !res.Removed {
		t.Fatalf("retire's result: %+v\n%s", res, out)
	}
	if _, _, err := bed.Exec(ctx, h, "kill", "-0", strconv.Itoa(workloadPID)); err == nil {
		t.Fatalf("workload pid %d still runs after retire", workloadPID)
	}
	workloadPID = 0
	if st, _, _ := bed.Exec(ctx, h, "systemctl", "show", "-p", "LoadState", "--value", "oarbank-agent.service"); strings.TrimSpace(st) != "not-found" {
		t.Errorf("the agent's unit after retire: LoadState %q", strings.TrimSpace(st))
	}
}
