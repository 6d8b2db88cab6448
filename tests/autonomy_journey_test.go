package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wisent/stado/autonomy"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
	_ "github.com/wisent/stado/store/etcdstore"
	etcdtest "github.com/wisent/stado/tests/etcd"
	"github.com/wisent/stado/tests/testbed"
)

// The autonomy journey: stado optimize run over a real fleet (systemd as
// PID 1 and OpenSSH on every testbed host), on the file store and on etcd.
// Each store runs the same shapes as subtests: the broken fleet (report
// changes nothing, enforce repairs hosts 2-4), the lease (two enforcers at
// once, a SIGKILLed holder), the blast radius (10 restores, 3 at a time,
// proven from the hosts' journals) and the failure budget.

// The two journeys are not parallel: each stops host5's sshd and acts on
// every host, which the other would read as its own evidence.
func TestAutonomyJourneyOnTheFileStore(t *testing.T) {
	bed := testbed.Shared(t, 10)
	autonomyJourney(t, bed, "file://"+bed.NewStore(t), "af")
}

func TestAutonomyJourneyOnEtcd(t *testing.T) {
	cluster := etcdtest.Start(t, 1)
	bed := testbed.Shared(t, 10)
	var eps []string
	for _, e := range cluster.Endpoints() {
		eps = append(eps, strings.TrimPrefix(e, "http://"))
	}
	autonomyJourney(t, bed, "etcd://"+strings.Join(eps, ",")+"/aj-etcd", "ae")
}

// ajCycle is the part of a recorded cycle the journey reads.
type ajCycle struct {
	Kind    string         `json:"kind"`
	ID      string         `json:"id"`
	Mode    string         `json:"mode"`
	Failed  int            `json:"failed"`
	Stopped string         `json:"stopped"`
	Counts  map[string]int `json:"counts"`
	Holder  *struct {
		PID int `json:"pid"`
	} `json:"holder"`
	Rows []struct {
		Host    string `json:"host"`
		Service string `json:"service"`
		Unit    string `json:"unit"`
		Action  string `json:"action"`
		Plan    string `json:"plan"`
		Refusal *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Stage   string `json:"stage"`
		} `json:"refusal"`
		Result *struct {
			OK      bool      `json:"ok"`
			Clean   bool      `json:"clean"`
			Started time.Time `json:"started"`
			Ended   time.Time `json:"ended"`
		} `json:"result"`
	} `json:"rows"`
}

func decodeCycle(t *testing.T, out string) ajCycle {
	t.Helper()
	var c ajCycle
	if err := json.Unmarshal([]byte(out), &c); err != nil || c.Kind != autonomy.CycleKind {
		t.Fatalf("not one cycle document (%v):\n%s", err, out)
	}
	return c
}

// row is the cycle's row of service on host, or fails.
func (c ajCycle) row(t *testing.T, host, service string) int {
	t.Helper()
	for i, r := range c.Rows {
		if r.Host == host && r.Service == service {
			return i
		}
	}
	t.Fatalf("no row for %s on %s in cycle %s", service, host, c.ID)
	return -1
}

const ajFleetHead = `version: 1
service_resolver: {refresh_seconds: 5}
autonomy: {mode: enforce, max_concurrent: 10, max_fraction: 1, failure_budget: 10}
targets:
`

const ajTarget = `  - name: %[1]s
    ssh: {address: %[2]s, port: 22, user: root}
    os: linux
    services:
%[3]s`

const ajTargetAlerted = `  - name: %[1]s
    ssh: {address: %[2]s, port: 22, user: root}
    os: linux
    alerts:
      - name: hook
        webhook: {url: "%[4]s"}
    services:
%[3]s`

const ajHostProcess = `      - name: %[1]s-stado
        unit: %[1]s-stado.service
        program: /usr/local/bin/stado
        args: [host, run]
        env: {STADO_STORE: "%[2]s", STADO_INTERVAL: 1s, STADO_HOST: %[3]s}
`

const ajService = `      - name: %[1]s
        unit: %[1]s.service
        program: %[2]s
        args: [%[3]s]
`

const ajIncomplete = `      - name: %[1]s
        unit: %[1]s.service
        unit_path: /etc/systemd/system/%[1]s.service
        incomplete_reason: adopted from a unit stado cannot render
`

func autonomyJourney(t *testing.T, bed *testbed.Bed, store, p string) {
	bin := testbed.BuildStado(t)
	bed.InstallStado(t, bin)
	c := &ajCLI{cli: newCLI(t, bed, store), store: store}
	cleanup := func(hosts []testbed.Host, names ...string) {
		for _, h := range hosts {
			for _, u := range names {
				removeUnit(bed, h, u) // its failed state reset by name: a parallel journey's restart counts stay
			}
		}
	}
	push := func(t *testing.T, doc string) {
		t.Helper()
		f := filepath.Join(t.TempDir(), "fleet.yaml")
		if err := os.WriteFile(f, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		c.mustRun(t, "registry", "push", f, "--reason", "autonomy journey")
	}

	t.Run("BrokenFleetIsReportedUnchangedThenRepairedByEnforce", func(t *testing.T) {
		hosts := bed.Hosts()[:7]
		svc := p + "-svc"
		t.Cleanup(func() { cleanup(hosts, p+"-stado.service", svc+".service") })
		hook := startAlertReceiver(t)
		var doc strings.Builder
		doc.WriteString(ajFleetHead)
		for i, h := range hosts {
			services := fmt.Sprintf(ajHostProcess, p, store, h.Name)
			switch i + 1 {
			case 6:
				services += fmt.Sprintf(ajIncomplete, svc)
			case 7:
				services += fmt.Sprintf(ajService, svc, "/bin/sh", `-c, "echo `+svc+` is dying >&2; exit 3"`)
			default:
				services += fmt.Sprintf(ajService, svc, "/bin/sleep", "infinity")
			}
			fmt.Fprintf(&doc, ajTargetAlerted, h.Name, h.Addr, services, hook.url)
		}
		push(t, doc.String())
		for i, h := range hosts {
			c.mustRun(t, "service", "ensure", p+"-stado", "--host", h.Name, "--reason", "the host process")
			if i+1 != 6 {
				c.run(t, "service", "ensure", svc, "--host", h.Name, "--reason", "the service under test") // host7's crash loop fails its ensure
			}
		}
		ctx := context.Background()
		unitFile := "/etc/systemd/system/" + svc + ".service"
		// host2: the unit file deleted; host3: the unit stopped; host4: its
		// bytes edited; host5: sshd stopped; host7 crash-loops.
		exec2 := func(h testbed.Host, argv ...string) {
			if _, errOut, err := bed.Exec(ctx, h, argv...); err != nil {
				t.Fatalf("%s: %v: %v %s", h.Name, argv, err, errOut)
			}
		}
		exec2(hosts[1], "systemctl", "stop", svc+".service")
		exec2(hosts[1], "rm", "-f", unitFile)
		exec2(hosts[1], "systemctl", "daemon-reload")
		exec2(hosts[2], "systemctl", "stop", svc+".service")
		exec2(hosts[3], "sh", "-c", "echo '# edited by hand' >> "+unitFile)
		if err := bed.StopSSHD(ctx, hosts[4]); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { bed.StartSSHD(context.Background(), hosts[4]) })

		// The beacons must say what broke before a plan may rest on them.
		want := map[string]string{hosts[1].Name: "missing", hosts[2].Name: "inactive", hosts[3].Name: "active", hosts[6].Name: "failing"}
		eventually(t, 60*time.Second, "beacons show the broken fleet", func() (bool, string) {
			for _, s := range c.list(t).Services {
				if w, ok := want[s.Host]; ok && s.Service == svc && s.State != w {
					return false, fmt.Sprintf("%s on %s is %s, want %s", s.Service, s.Host, s.State, w)
				}
				// A crash loop is one once its supervisor started it
				// CrashLoopStarts times; before, the rule restarts it.
				if s.Host == hosts[6].Name && s.Service == svc && s.Starts < autonomy.CrashLoopStarts {
					return false, fmt.Sprintf("host7's crash loop started %d time(s) so far", s.Starts)
				}
			}
			return true, ""
		})

		before := ajSnapshot(t, bed, hosts, svc, c)
		code, out, errOut := c.run(t, "optimize", "run", "--json")
		if code != 0 {
			t.Fatalf("report: exit %d\n%s\n%s", code, out, errOut)
		}
		rep := decodeCycle(t, out)
		t.Logf("report cycle %s: %v", rep.ID, rep.Counts)
		expect := map[int]string{2: "restore", 3: "start", 4: "reinstall"}
		for k, action := range expect {
			r := rep.Rows[rep.row(t, hosts[k-1].Name, svc)]
			if r.Action != action || r.Refusal != nil {
				t.Errorf("host%d: %+v, want %s", k, r, action)
			}
		}
		if r := rep.Rows[rep.row(t, hosts[1].Name, svc)]; !strings.Contains(r.Plan, "would create") {
			t.Errorf("host2's restore does not say would create: %q", r.Plan)
		}
		if r := rep.Rows[rep.row(t, hosts[4].Name, svc)]; r.Refusal == nil || r.Refusal.Code != "unreachable" || r.Refusal.Stage == "" || !strings.Contains(r.Refusal.Message, "stage "+r.Refusal.Stage) {
			t.Errorf("host5: %+v, want unreachable naming the stage", r.Refusal)
		}
		if r := rep.Rows[rep.row(t, hosts[5].Name, svc)]; r.Refusal == nil || r.Refusal.Code != "declaration_incomplete" {
			t.Errorf("host6: %+v, want declaration_incomplete", r.Refusal)
		}
		if r := rep.Rows[rep.row(t, hosts[6].Name, svc)]; r.Refusal == nil || r.Refusal.Code != "crash_loop" || !strings.Contains(r.Refusal.Message, "exited 3") {
			t.Errorf("host7: %+v, want the crash loop refused with its evidence", r.Refusal)
		}
		for _, r := range rep.Rows {
			acting := r.Action == "restore" || r.Action == "start" || r.Action == "reinstall" || r.Action == "restart"
			if acting && r.Service != svc {
				t.Errorf("an action beyond hosts 2-4: %+v", r)
			}
			if r.Result != nil {
				t.Errorf("report mode acted: %+v", r)
			}
		}
		// Each refusal was alerted on its host's channel, once.
		alerted := map[string]int{}
		for _, a := range hook.received() {
			if a.Event == "autonomy_refused" {
				alerted[a.Recovery.Host+" "+a.Recovery.State]++
			}
		}
		for k, n := range map[string]int{hosts[4].Name + " unreachable": 2, hosts[5].Name + " declaration_incomplete": 1, hosts[6].Name + " crash_loop": 1} {
			if alerted[k] != n {
				t.Errorf("alerts %v: want %d for %s", alerted, n, k)
			}
		}
		nAlerts := len(hook.received())
		// The text form says it too, and exits 0.
		if code, text, _ := c.run(t, "optimize", "run"); code != 0 || !strings.Contains(text, "would create "+unitFile) {
			t.Errorf("report text: exit %d\n%s", code, text)
		}
		if n := len(hook.received()); n != nAlerts {
			t.Errorf("the same refusals were alerted again by the next cycle: %d alerts, then %d", nAlerts, n)
		}
		after := ajSnapshot(t, bed, hosts, svc, c)
		if before != after {
			t.Errorf("report mode changed something:\nbefore %s\nafter  %s", before, after)
		}

		// Enforce: hosts 2-4 repaired in one cycle and verified clean.
		code, out, errOut = c.run(t, "optimize", "run", "--mode", "enforce", "--max-concurrent", "3", "--json")
		if code != 0 {
			t.Fatalf("enforce: exit %d\n%s\n%s", code, out, errOut)
		}
		enf := decodeCycle(t, out)
		for k, action := range expect {
			r := enf.Rows[enf.row(t, hosts[k-1].Name, svc)]
			if r.Action != action || r.Result == nil || !r.Result.OK || !r.Result.Clean {
				t.Errorf("host%d: %+v, want %s done and verified clean", k, r, action)
			}
		}
		_, vout, _ := c.run(t, "service", "verify", svc, "--host", hosts[1].Name, "--host", hosts[2].Name, "--host", hosts[3].Name, "--json")
		var ver struct {
			Hosts []struct {
				Host     string `json:"host"`
				Services []struct {
					State      string `json:"state"`
					Drift      bool   `json:"drift"`
					FileAbsent bool   `json:"file_absent"`
				} `json:"services"`
			} `json:"hosts"`
		}
		if err := json.Unmarshal([]byte(vout), &ver); err != nil || len(ver.Hosts) != 3 {
			t.Fatalf("verify: %v\n%s", err, vout)
		}
		for _, h := range ver.Hosts {
			if len(h.Services) != 1 || h.Services[0].State != "active" || h.Services[0].Drift || h.Services[0].FileAbsent {
				t.Errorf("verify after enforce: %s %+v", h.Host, h.Services)
			}
		}
		body, _ := bed.ReadFile(hosts[3], unitFile)
		if strings.Contains(string(body), "edited by hand") {
			t.Errorf("host4 still runs the edited bytes:\n%s", body)
		}
		st := ajStatus(t, c, 0)
		if st.Latest == nil || st.Latest.ID != enf.ID || len(st.Latest.Rows) != 2*len(hosts) {
			t.Fatalf("status shows %+v, want cycle %s with %d rows", st.Latest, enf.ID, 2*len(hosts))
		}
	})

	t.Run("OneEnforcerAtATimeAndADeadHoldersLeaseExpires", func(t *testing.T) {
		hosts := bed.Hosts()[:2]
		svc := p + "-lease"
		t.Cleanup(func() { cleanup(hosts, svc+".service") })
		var doc strings.Builder
		doc.WriteString(ajFleetHead)
		for _, h := range hosts {
			fmt.Fprintf(&doc, ajTarget, h.Name, h.Addr, fmt.Sprintf(ajService, svc, "/bin/sleep", "infinity"))
		}
		push(t, doc.String())
		// Two enforcers at once; a settle of 4 s keeps the first one's
		// actions, and its lease, long enough for the second to meet it.
		type res struct {
			code     int
			out, err string
		}
		results := make(chan res, 2)
		for range 2 {
			go func() {
				code, out, errOut := c.run(t, "optimize", "run", "--mode", "enforce", "--settle", "4s", "--json")
				results <- res{code, out, errOut}
			}()
		}
		var acted, refused int
		for range 2 {
			r := <-results
			switch {
			case r.code == 0:
				cyc := decodeCycle(t, r.out)
				for _, row := range cyc.Rows {
					if row.Result != nil {
						acted++
					}
				}
			case r.code == 3 && strings.Contains(r.err, "lease_held") && strings.Contains(r.err, "pid "):
				refused++
			default:
				t.Errorf("an enforcer: exit %d\n%s\n%s", r.code, r.out, r.err)
			}
		}
		if acted != len(hosts) || refused != 1 {
			t.Fatalf("%d actions and %d refusals, want %d actions by one enforcer and one refusal", acted, refused, len(hosts))
		}

		// SIGKILL the holder mid-cycle: the next enforcer is refused while
		// its lease lives, and takes over once the TTL ran out.
		cleanup(hosts, svc+".service")
		cmd := exec.Command(c.bin, "optimize", "run", "--mode", "enforce", "--settle", "30s", "--wait", "60s", "--lease-ttl", "4s", "--json")
		cmd.Env = c.env
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killed := false
		t.Cleanup(func() {
			if !killed {
				cmd.Process.Kill()
			}
			cmd.Wait()
		})
		eventually(t, 30*time.Second, "the first enforcer holds the lease", func() (bool, string) {
			st := ajStatus(t, c, 0)
			return st.Lease != nil && st.Lease.PID == cmd.Process.Pid, fmt.Sprintf("%+v", st.Lease)
		})
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		killed = true
		cmd.Wait()
		code, out, errOut := c.run(t, "optimize", "run", "--mode", "enforce", "--json")
		if code != 3 || !strings.Contains(errOut, fmt.Sprintf("pid %d", cmd.Process.Pid)) {
			t.Fatalf("right after the kill: exit %d, want the refusal naming pid %d\n%s\n%s", code, cmd.Process.Pid, out, errOut)
		}
		var took ajCycle
		eventually(t, 30*time.Second, "the next enforcer takes over after the TTL", func() (bool, string) {
			code, out, errOut := c.run(t, "optimize", "run", "--mode", "enforce", "--json")
			if code != 0 {
				return false, errOut
			}
			took = decodeCycle(t, out)
			return true, ""
		})
		if took.Holder == nil || took.Holder.PID == cmd.Process.Pid {
			t.Errorf("the cycle after the TTL: holder %+v", took.Holder)
		}
	})

	t.Run("TenRestoresThreeAtATimeByTheHostsJournals", func(t *testing.T) {
		hosts := bed.Hosts()
		if len(hosts) < 10 {
			t.Fatalf("%d hosts", len(hosts))
		}
		svc := p + "-blast"
		t.Cleanup(func() { cleanup(hosts, svc+".service") })
		var doc strings.Builder
		doc.WriteString(ajFleetHead)
		for _, h := range hosts {
			fmt.Fprintf(&doc, ajTarget, h.Name, h.Addr, fmt.Sprintf(ajService, svc, "/bin/sleep", "infinity"))
		}
		push(t, doc.String())
		since := time.Now().Add(-time.Second)
		code, out, errOut := c.run(t, "optimize", "run", "--mode", "enforce", "--max-concurrent", "3", "--settle", "2s", "--json")
		if code != 0 {
			t.Fatalf("enforce: exit %d\n%s\n%s", code, out, errOut)
		}
		cyc := decodeCycle(t, out)
		if cyc.Counts["restore"] != len(hosts) {
			t.Fatalf("counts %v, want %d restores", cyc.Counts, len(hosts))
		}
		var windows []ajWindow
		for _, h := range hosts {
			w := ajActionWindow(t, bed, h, svc+".service", since)
			t.Logf("%s acted on %s to %s", h.Name, w.from.Format("15:04:05.000000"), w.to.Format("15:04:05.000000"))
			windows = append(windows, w)
		}
		if n := ajMaxOverlap(windows); n > 3 {
			t.Errorf("%d hosts were acted on at once by their journals, cap 3", n)
		} else {
			t.Logf("at most %d hosts acted on at once by their journals", n)
		}
	})

	t.Run("FailureBudgetStopsTheCycleAndRecordsTheRestNotAttempted", func(t *testing.T) {
		hosts := bed.Hosts()[:4]
		svc := p + "-fail"
		t.Cleanup(func() { cleanup(hosts, svc+".service") })
		var doc strings.Builder
		doc.WriteString(ajFleetHead)
		for _, h := range hosts {
			fmt.Fprintf(&doc, ajTarget, h.Name, h.Addr, fmt.Sprintf(ajService, svc, "/bin/false", ""))
		}
		push(t, doc.String())
		code, out, errOut := c.run(t, "optimize", "run", "--mode", "enforce", "--max-concurrent", "1", "--failure-budget", "2", "--wait", "10s", "--json")
		if code != 1 {
			t.Fatalf("enforce with failing restores: exit %d, want 1\n%s\n%s", code, out, errOut)
		}
		cyc := decodeCycle(t, out)
		var failed, notAttempted int
		for _, r := range cyc.Rows {
			switch {
			case r.Result != nil && !r.Result.OK:
				failed++
			case r.Refusal != nil && r.Refusal.Code == "not_attempted" && r.Action == "restore":
				notAttempted++
			default:
				t.Errorf("row %+v", r)
			}
		}
		if failed != 2 || notAttempted != 2 || cyc.Failed != 2 || !strings.Contains(cyc.Stopped, "failure budget of 2") {
			t.Errorf("failed %d, not attempted %d, stopped %q; want 2, 2 and the budget", failed, notAttempted, cyc.Stopped)
		}
		st := ajStatus(t, c, 5)
		if st.Latest == nil || st.Latest.ID != cyc.ID || len(st.History) < 2 {
			t.Errorf("status: %+v", st)
		}
	})

	// Last: the enforcing cycle as a managed unit (catalog product
	// stado-autonomy) on host1, acting on the others while it runs.
	t.Run("TheCycleRunsAsAManagedUnitThatStadoKeepsAlive", func(t *testing.T) {
		hosts := bed.Hosts()[:3]
		ops := hosts[0]
		svc, cycle := p+"-managed", p+"-cycle"
		t.Cleanup(func() {
			cleanup(hosts, cycle+".service", svc+".service")
			bed.Exec(context.Background(), ops, "rm", "-f", "/root/.ssh/aj_cycle_key", "/root/.ssh/aj_cycle_known_hosts")
		})
		key, err := os.ReadFile(bed.KeyPath())
		if err != nil {
			t.Fatal(err)
		}
		known, err := os.ReadFile(bed.KnownHosts())
		if err != nil {
			t.Fatal(err)
		}
		if err := bed.WriteFile(ops, "/root/.ssh/aj_cycle_key", key, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := bed.WriteFile(ops, "/root/.ssh/aj_cycle_known_hosts", known, 0o644); err != nil {
			t.Fatal(err)
		}
		var doc strings.Builder
		doc.WriteString(ajFleetHead)
		for i, h := range hosts {
			services := fmt.Sprintf(ajService, svc, "/bin/sleep", "infinity")
			if i == 0 {
				services += fmt.Sprintf(`      - name: %[1]s
        unit: %[1]s.service
        product: stado-autonomy
        program: /usr/local/bin/stado
        args: [optimize, run, --mode, enforce, --every, 2s, --lease-ttl, 3s, --settle, 1s]
        env: {STADO_STORE: "%[2]s", STADO_KNOWN_HOSTS: /root/.ssh/aj_cycle_known_hosts, STADO_SSH_IDENTITY: /root/.ssh/aj_cycle_key, STADO_NO_KEEPER: "1"}
`, cycle, store)
			}
			fmt.Fprintf(&doc, ajTarget, h.Name, h.Addr, services)
		}
		push(t, doc.String())
		c.mustRun(t, "service", "ensure", cycle, "--host", ops.Name, "--reason", "the fleet's enforcer")
		// The managed cycle restores the service on every host by itself.
		eventually(t, 90*time.Second, "the managed cycle restored every host", func() (bool, string) {
			_, out, _ := c.run(t, "service", "verify", svc, "--json")
			var v struct {
				Hosts []struct {
					Host     string `json:"host"`
					Services []struct {
						State string `json:"state"`
						Drift bool   `json:"drift"`
					} `json:"services"`
				} `json:"hosts"`
			}
			if json.Unmarshal([]byte(out), &v) != nil || len(v.Hosts) != len(hosts) {
				return false, out
			}
			for _, h := range v.Hosts {
				if len(h.Services) != 1 || h.Services[0].State != "active" || h.Services[0].Drift {
					return false, fmt.Sprintf("%s: %+v", h.Host, h.Services)
				}
			}
			return true, ""
		})
		var holder struct {
			Latest *struct {
				Mode   string `json:"mode"`
				Holder *struct {
					Host string `json:"host"`
					PID  int    `json:"pid"`
				} `json:"holder"`
			} `json:"latest"`
		}
		// Its cycle is recorded once its re-verifies are done.
		eventually(t, 30*time.Second, "the managed cycle's record", func() (bool, string) {
			if err := json.Unmarshal([]byte(c.mustRun(t, "optimize", "status", "--json")), &holder); err != nil || holder.Latest == nil || holder.Latest.Holder == nil {
				return false, fmt.Sprintf("status: %v", err)
			}
			l := holder.Latest
			return l.Mode == "enforce" && l.Holder.Host == ops.Name, fmt.Sprintf("the latest cycle ran %s on %s, want enforce on %s", l.Mode, l.Holder.Host, ops.Name)
		})
		first := holder.Latest.Holder.PID
		// Killed, its unit brings it back (keep-alive) and, once the dead
		// process's lease ran out, the new one runs the cycles.
		if _, errOut, err := bed.Exec(context.Background(), ops, "systemctl", "kill", "--signal", "KILL", cycle+".service"); err != nil {
			t.Fatalf("kill the cycle: %v %s", err, errOut)
		}
		eventually(t, 60*time.Second, "a new cycle process after the kill", func() (bool, string) {
			if json.Unmarshal([]byte(c.mustRun(t, "optimize", "status", "--json")), &holder) != nil || holder.Latest == nil || holder.Latest.Holder == nil {
				return false, "no cycle"
			}
			return holder.Latest.Holder.PID != first, fmt.Sprintf("still pid %d", first)
		})
	})
}

// ajSnapshot is what report mode must leave as it was: each host's unit
// file mtime and MainPID of svc (read through nsenter, so host5 without
// its sshd too; host7's crash loop changes its own pid, so only its file
// counts), each host process's MainPID, and the registry revision.
func ajSnapshot(t *testing.T, bed *testbed.Bed, hosts []testbed.Host, svc string, c *ajCLI) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	for _, h := range hosts {
		mtime, _, _ := bed.Exec(ctx, h, "stat", "-c", "%Y.%y", "/etc/systemd/system/"+svc+".service")
		pid, _, _ := bed.Exec(ctx, h, "systemctl", "show", "-p", "MainPID", "--value", svc+".service")
		if h.Index == 7 {
			pid = "(a crash loop: its supervisor changes its pid every 2 s)"
		}
		hp, _, _ := bed.Exec(ctx, h, "systemctl", "show", "-p", "MainPID", "--value", strings.TrimSuffix(svc, "-svc")+"-stado.service")
		fmt.Fprintf(&b, "%s mtime=%s pid=%s host-process=%s; ", h.Name, strings.TrimSpace(mtime), strings.TrimSpace(pid), strings.TrimSpace(hp))
	}
	st, err := store.Open(ctx, c.store)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, meta, err := registry.Load(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "registry revision %d", meta.Revision)
	return b.String()
}

type ajStatusDoc struct {
	Lease *struct {
		PID int `json:"pid"`
	} `json:"lease"`
	Latest *struct {
		ID   string            `json:"id"`
		Rows []json.RawMessage `json:"rows"`
	} `json:"latest"`
	History []json.RawMessage `json:"history"`
}

func ajStatus(t *testing.T, c *ajCLI, history int) ajStatusDoc {
	t.Helper()
	args := []string{"optimize", "status", "--json"}
	if history > 0 {
		args = append(args, "--history", strconv.Itoa(history))
	}
	var d ajStatusDoc
	if err := json.Unmarshal([]byte(c.mustRun(t, args...)), &d); err != nil {
		t.Fatalf("status: %v", err)
	}
	return d
}

// ajCLI is the workstation's stado on the journey's store.
type ajCLI struct {
	*cli
	store string
}

// ajWindow is when one host was acted on, by its own journal.
type ajWindow struct{ from, to time.Time }

// ajActionWindow reads host h's journal since since: the sshd connections
// (from the key accepted to the session closed, paired by the pid of the
// connection's sshd process) and systemd's start job
// of unit. The action's window is the connection during which the unit was
// started: the cycle opens one connection per host acted on, and closes it
// after the re-verify.
func ajActionWindow(t *testing.T, bed *testbed.Bed, h testbed.Host, unit string, since time.Time) ajWindow {
	t.Helper()
	out, errOut, err := bed.Exec(context.Background(), h, "journalctl", "-o", "json", "--since", "@"+strconv.FormatInt(since.Unix(), 10),
		"--output-fields", "MESSAGE,SYSLOG_IDENTIFIER,UNIT,JOB_TYPE,JOB_RESULT,_PID,__REALTIME_TIMESTAMP")
	if err != nil {
		t.Fatalf("%s: journalctl: %v %s", h.Name, err, errOut)
	}
	open := map[string]time.Time{}
	var conns []ajWindow
	var started time.Time
	for _, line := range strings.Split(out, "\n") {
		if line == "" {
			continue
		}
		var e map[string]any
		if json.Unmarshal([]byte(line), &e) != nil {
			continue
		}
		msg, _ := e["MESSAGE"].(string)
		us, _ := strconv.ParseInt(fmt.Sprint(e["__REALTIME_TIMESTAMP"]), 10, 64)
		at := time.UnixMicro(us)
		pid := fmt.Sprint(e["_PID"]) // one sshd process per connection, from accept to close
		switch {
		case e["SYSLOG_IDENTIFIER"] == "sshd" && strings.HasPrefix(msg, "Accepted publickey"):
			open[pid] = at
		case e["SYSLOG_IDENTIFIER"] == "sshd" && strings.Contains(msg, "session closed for user"):
			if from, ok := open[pid]; ok {
				conns = append(conns, ajWindow{from, at})
				delete(open, pid)
			}
		case e["UNIT"] == unit && e["JOB_TYPE"] == "start" && e["JOB_RESULT"] == "done":
			started = at
		}
	}
	if started.IsZero() {
		t.Fatalf("%s: the journal shows no start of %s since %s", h.Name, unit, since)
	}
	for _, c := range conns {
		if !started.Before(c.from) && !started.After(c.to) {
			return c
		}
	}
	var sshd []string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, `"sshd"`) {
			sshd = append(sshd, line)
		}
	}
	t.Fatalf("%s: no sshd connection in the journal spans the start of %s at %s (%d connections, %d still open); sshd said:\n%s",
		h.Name, unit, started, len(conns), len(open), strings.Join(sshd, "\n"))
	return ajWindow{}
}

// ajMaxOverlap is the most windows open at one instant.
func ajMaxOverlap(ws []ajWindow) int {
	type edge struct {
		at   time.Time
		step int
	}
	var es []edge
	for _, w := range ws {
		es = append(es, edge{w.from, 1}, edge{w.to, -1})
	}
	sort.Slice(es, func(i, j int) bool {
		if es[i].at.Equal(es[j].at) {
			return es[i].step < es[j].step // an end before a start at the same instant
		}
		return es[i].at.Before(es[j].at)
	})
	n, peak := 0, 0
	for _, e := range es {
		n += e.step
		peak = max(peak, n)
	}
	return peak
}
