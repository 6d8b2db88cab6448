package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/declaration"
	"github.com/wisent/stado/register"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
	"github.com/wisent/stado/tests/testbed"
)

// The Oarbank journey: the agent (tests/fixtures/oarbank-agent, which runs
// one long-lived workload child in a delegated sub-cgroup and adopts it
// after a restart) is deployed from the catalog on three hosts with its
// required environment given on the command line, answers its question on
// loopback on every node, and is restarted — by a changed declaration, by
// answering recovery and by hand — without its workload ever stopping.
//
// The testbed's hosts share one network namespace, so each agent listens on
// a loopback port of its own (127.0.0.1:745K, through OARBANK_LISTEN, which
// the fixture honours) and keeps its state under /var/tmp, which is per host
// (/var/lib is shared with the machine).

const oarbankFleet = `version: 1
service_resolver: {refresh_seconds: 2}
targets:
%s`

const oarbankTarget = `  - name: %[1]s
    ssh: {address: %[2]s, port: 22, user: root}
    os: linux
    services:
      - name: ob-stado
        unit: ob-stado.service
        program: /usr/local/bin/stado
        args: [host, run, --listen, "%[2]s:19480"]
        env: {STADO_STORE: "%[3]s", STADO_INTERVAL: 1s, STADO_HOST: %[1]s, HOME: /var/tmp/ob-home}
`

type obWorkloads struct {
	AgentPID  int `json:"agent_pid"`
	Workloads []struct {
		Name    string `json:"name"`
		State   string `json:"state"`
		PID     int    `json:"pid"`
		Cgroup  string `json:"cgroup"`
		Adopted bool   `json:"adopted"`
	} `json:"workloads"`
}

func TestOarbankAgentIsDeployedAnsweredAndRestartedWithoutStoppingItsWorkload(t *testing.T) {
	t.Parallel()
	bed := testbed.Shared(t, 3)
	bin := testbed.BuildStado(t)
	bed.InstallStado(t, bin)
	ctx := context.Background()
	hosts := bed.Hosts()[:3]

	for name, pkg := range map[string]string{"oarbank-agent": "./fixtures/oarbank-agent", "ob-service-protocol": "./fixtures/service-protocol"} {
		dst := filepath.Join(bed.BinDir(), name)
		if out, err := exec.Command("go", "build", "-o", dst, pkg).CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", pkg, err, out)
		}
		bed.InstallBin(t, dst)
	}
	storeDir := bed.NewStore(t)
	storeURL := "file://" + storeDir
	c := newCLI(t, bed, storeURL)
	var targets strings.Builder
	for _, h := range hosts {
		fmt.Fprintf(&targets, oarbankTarget, h.Name, h.Addr, storeURL)
	}
	fleet := filepath.Join(t.TempDir(), "fleet.yaml")
	os.WriteFile(fleet, []byte(fmt.Sprintf(oarbankFleet, targets.String())), 0o644)
	c.mustRun(t, "registry", "push", fleet, "--reason", "oarbank journey")

	workloadPIDs := map[string]int{}
	t.Cleanup(func() {
		for _, h := range hosts {
			for _, u := range []string{"ob-stado.service", "oarbank-agent.service"} {
				removeUnit(bed, h, u) // its failed state reset by name: a parallel journey's restart counts stay
			}
			// KillMode=process leaves the workload behind by design: end it
			// by the pid the agent recorded
			if pid := workloadPIDs[h.Name]; pid > 0 {
				bed.Exec(ctx, h, "kill", strconv.Itoa(pid))
			}
			bed.Exec(ctx, h, "rm", "-rf", "/var/tmp/ob-home", "/var/tmp/oarbank", "/var/tmp/ob-proto")
		}
	})

	// Without its required variable the catalog product is refused, naming it.
	code, out, errOut := c.run(t, "service", "ensure", "oarbank-agent", "--host", hosts[0].Name, "--json")
	if code == 0 || !strings.Contains(out+errOut, "OARBANK_COORDINATOR") {
		t.Fatalf("ensure without OARBANK_COORDINATOR: exit %d, want a refusal naming it\n%s%s", code, out, errOut)
	}
	port := func(k int) int { return 7450 + k }
	for k, h := range hosts {
		c.mustRun(t, "service", "ensure", "oarbank-agent", "--host", h.Name,
			"--env", "OARBANK_COORDINATOR=http://127.0.0.1:9/",
			"--env", "OARBANK_HOME=/var/tmp/oarbank",
			"--env", fmt.Sprintf("OARBANK_LISTEN=127.0.0.1:%d", port(k+1)),
			"--reason", "deploy the agent")
	}
	st, err := store.OpenFileStore(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = registry.Update(ctx, st, "the agents answer on loopback", func(d *registry.Document) error {
		for k, h := range hosts {
			d.Directory = append(d.Directory, registry.DirectoryEntry{Service: "oarbank-agent", Host: h.Name, Address: "127.0.0.1", Port: port(k + 1)})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hosts {
		c.mustRun(t, "service", "ensure", "ob-stado", "--host", h.Name, "--reason", "the host process")
	}

	mainPID := func(h testbed.Host) int {
		out, _, err := bed.Exec(ctx, h, "systemctl", "show", "-p", "MainPID", "--value", "oarbank-agent.service")
		if err != nil {
			t.Fatalf("MainPID on %s: %v", h.Name, err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(out))
		return pid
	}
	workloads := func(k int) (obWorkloads, error) {
		var w obWorkloads
		cl := &http.Client{Timeout: 2 * time.Second}
		resp, err := cl.Get(fmt.Sprintf("http://127.0.0.1:%d/v1/workloads", port(k+1)))
		if err != nil {
			return w, err
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return w, json.Unmarshal(data, &w)
	}
	report := func(h testbed.Host) *beacon.UnitReport {
		return unitOf(storedBeacon(ctx, st, h.Name), "oarbank-agent")
	}
	type workload struct {
		pid    int
		cgroup string
	}
	running := map[string]workload{}

	// Every node answers its question on loopback, and runs its workload in
	// a cgroup of its own below the agent's unit.
	for k, h := range hosts {
		eventually(t, 60*time.Second, h.Name+" answers its question", func() (bool, string) {
			r := report(h)
			if r == nil || r.Answering == nil {
				return false, "no answering block yet"
			}
			a := r.Answering
			if a.Question == nil || a.Question.Endpoint != fmt.Sprintf("127.0.0.1:%d", port(k+1)) {
				return false, fmt.Sprintf("question %+v", a.Question)
			}
			ok := a.State == beacon.AnswerFinished && a.Finished != nil && a.Finished.Answered != nil && a.Finished.Answered.Successful
			return ok, fmt.Sprintf("state %s unreadable %q", a.State, a.Unreadable)
		})
		w, err := workloads(k)
		if err != nil || len(w.Workloads) != 1 || w.Workloads[0].State != "running" {
			t.Fatalf("%s /v1/workloads: %+v %v", h.Name, w, err)
		}
		wl := w.Workloads[0]
		if !strings.Contains(wl.Cgroup, "oarbank-agent.service/workload-") {
			t.Errorf("%s: workload cgroup %q is not its own below the agent's unit", h.Name, wl.Cgroup)
		}
		if _, _, err := bed.Exec(ctx, h, "kill", "-0", strconv.Itoa(wl.PID)); err != nil {
			t.Fatalf("%s: workload pid %d does not run: %v", h.Name, wl.PID, err)
		}
		running[h.Name] = workload{wl.PID, wl.Cgroup}
		workloadPIDs[h.Name] = wl.PID
	}
	// keeps asserts that host k's workload is the same process in the same
	// cgroup, listed running (and adopted) by the agent now answering.
	keeps := func(k int, agentBefore int, why string) {
		t.Helper()
		h := hosts[k]
		eventually(t, 30*time.Second, h.Name+" answers after "+why, func() (bool, string) {
			w, err := workloads(k)
			if err != nil {
				return false, err.Error()
			}
			return w.AgentPID != agentBefore, fmt.Sprintf("agent pid %d", w.AgentPID)
		})
		w, _ := workloads(k)
		want := running[h.Name]
		if len(w.Workloads) != 1 || w.Workloads[0].PID != want.pid || w.Workloads[0].State != "running" || !w.Workloads[0].Adopted {
			t.Errorf("%s after %s: workloads %+v, want pid %d running and adopted", h.Name, why, w.Workloads, want.pid)
		}
		out, _, _ := bed.Exec(ctx, h, "cat", fmt.Sprintf("/proc/%d/cgroup", want.pid))
		if !strings.Contains(out, want.cgroup) {
			t.Errorf("%s after %s: workload cgroup now %q, was %q", h.Name, why, strings.TrimSpace(out), want.cgroup)
		}
		if pid := mainPID(h); pid == agentBefore || pid == 0 {
			t.Errorf("%s after %s: agent MainPID %d, was %d: want a new agent", h.Name, why, pid, agentBefore)
		}
	}

	// A changed declaration on every host restarts every agent through
	// ensure: the workloads stay.
	before := map[string]int{}
	for _, h := range hosts {
		before[h.Name] = mainPID(h)
	}
	c.mustRun(t, "service", "ensure", "oarbank-agent", "--all", "--env", "OARBANK_COORDINATOR=http://127.0.0.1:10/", "--reason", "a new coordinator")
	doc, _, err := registry.Load(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	for k, h := range hosts {
		tg, _ := doc.Target(h.Name)
		s, _ := tg.Service("oarbank-agent")
		if s == nil || s.Env["OARBANK_COORDINATOR"] != "http://127.0.0.1:10/" || s.Env["OARBANK_LISTEN"] == "" {
			t.Fatalf("%s declaration after ensure --all --env: %+v", h.Name, s)
		}
		keeps(k, before[h.Name], "ensure --all --env")
	}

	// The agent stands on host2: answering recovery restarts it there only,
	// and the workload stays.
	h2 := hosts[1]
	for _, h := range hosts {
		before[h.Name] = mainPID(h)
	}
	if err := bed.WriteFile(h2, "/var/tmp/oarbank/fault", []byte("stand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "host2's standing agent is recovered", func() (bool, string) {
		r := report(h2)
		if r == nil || r.Answering == nil || len(r.Answering.Recovery) == 0 {
			return false, "no recovery yet"
		}
		var rec register.Recovery
		json.Unmarshal(r.Answering.Recovery, &rec)
		return rec.State == register.Attempted && rec.Restart != nil && rec.Restart.OK, fmt.Sprintf("recovery %s", rec.State)
	})
	keeps(1, before[h2.Name], "answering recovery")
	for _, k := range []int{0, 2} {
		if pid := mainPID(hosts[k]); pid != before[hosts[k].Name] {
			t.Errorf("%s agent MainPID %d → %d: a host that answered was restarted", hosts[k].Name, before[hosts[k].Name], pid)
		}
	}
	// and by hand
	agent := mainPID(h2)
	c.mustRun(t, "service", "restart", "oarbank-agent", "--host", h2.Name)
	keeps(1, agent, "service restart")

	// The agent crash-loops on host3: status reads failing with the exit
	// code, the run count and the last stderr line.
	h3 := hosts[2]
	if err := bed.WriteFile(h3, "/var/tmp/oarbank/fault", []byte("crash\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bed.Exec(ctx, h3, "systemctl", "restart", "oarbank-agent.service")
	eventually(t, 60*time.Second, "host3's crash loop reads failing", func() (bool, string) {
		code, out, _ := c.run(t, "service", "status", "oarbank-agent", "--host", h3.Name, "--json")
		var d struct {
			Hosts []struct {
				State      string `json:"state"`
				LastExit   *int   `json:"last_exit"`
				Starts     int    `json:"starts"`
				LastStderr string `json:"last_stderr"`
			} `json:"hosts"`
		}
		json.Unmarshal([]byte(out), &d)
		if len(d.Hosts) != 1 {
			return false, fmt.Sprintf("exit %d: %s", code, out)
		}
		s := d.Hosts[0]
		show, _, _ := bed.Exec(ctx, h3, "systemctl", "show", "-p", "MainPID,ActiveState,SubState,NRestarts,ExecMainStatus", "oarbank-agent.service")
		ok := s.State == "failing" && s.LastExit != nil && *s.LastExit == 3 && s.Starts >= 2 && strings.Contains(s.LastStderr, "coordinator handshake failed")
		return ok, fmt.Sprintf("%+v; systemd: %s", s, strings.ReplaceAll(show, "\n", " "))
	})
	bed.Exec(ctx, h3, "rm", "-f", "/var/tmp/oarbank/fault")

	// Service-protocol evidence: host1's agent declaration names the
	// protocol fixture; ready false, then true, then a malformed answer.
	h1 := hosts[0]
	bed.Exec(ctx, h1, "mkdir", "-p", "/var/tmp/ob-proto")
	bed.WriteFile(h1, "/var/tmp/ob-proto/running", nil, 0o644)
	bed.WriteFile(h1, "/var/tmp/ob-proto/ready", []byte("false"), 0o644)
	_, _, err = registry.Update(ctx, st, "protocol evidence", func(d *registry.Document) error {
		tg, _ := d.Target(h1.Name)
		s, _ := tg.Service("oarbank-agent")
		s.Protocol = &declaration.ServiceProtocol{Exec: []string{"/usr/local/bin/ob-service-protocol"}, PeriodSeconds: 1}
		s.Env["FIXTURE_STATE"] = "/var/tmp/ob-proto"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	protocol := func(want func(p *beacon.Protocol) bool, what string) {
		t.Helper()
		eventually(t, 30*time.Second, "host1's beacon shows "+what, func() (bool, string) {
			r := report(h1)
			if r == nil || r.Protocol == nil {
				return false, "no protocol block"
			}
			return want(r.Protocol), fmt.Sprintf("%+v", *r.Protocol)
		})
	}
	protocol(func(p *beacon.Protocol) bool {
		return p.State == beacon.ProtocolRead && p.Ready != nil && !*p.Ready && p.Running != nil && *p.Running
	}, "ready false")
	bed.WriteFile(h1, "/var/tmp/ob-proto/ready", []byte("true"), 0o644)
	protocol(func(p *beacon.Protocol) bool { return p.State == beacon.ProtocolRead && p.Ready != nil && *p.Ready }, "ready true")
	bed.WriteFile(h1, "/var/tmp/ob-proto/answer", []byte("malformed"), 0o644)
	protocol(func(p *beacon.Protocol) bool {
		return p.State == beacon.ProtocolUnreadable && p.Op == "status" && strings.Contains(p.Cause, "JSON")
	}, "the malformed answer as unreadable, naming the op")
}
