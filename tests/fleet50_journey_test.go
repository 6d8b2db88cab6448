package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wisent/stado/autonomy"
	"github.com/wisent/stado/tests/testbed"
)

// The fleet-size journey: 50 testbed hosts, each running its host process
// and one declared service. A quarter of them is broken on the hosts
// (stopped, its unit file edited, its unit file removed); the beacons say
// so without a connection (service list), a report cycle plans exactly
// those hosts from the beacons (every host swept for reachability only),
// an enforcing cycle repairs them, and the hosts themselves (systemctl and
// the file bytes) show it. Beside it, not asserted, it logs what a report
// cycle with nothing to do costs as a whole process on warm connections
// (the keeper's) and cold.

const f50Hosts = 50

const f50Head = `version: 1
autonomy: {mode: enforce, max_concurrent: 12, max_fraction: 1, failure_budget: 3}
targets:
`

const f50Target = `  - name: %[1]s
    ssh: {address: %[2]s, port: 22, user: root}
    os: linux
    services:
      - name: f50-stado
        unit: f50-stado.service
        program: /usr/local/bin/stado
        args: [host, run, --stale-after, 30s]
        env: {STADO_STORE: "%[3]s", STADO_INTERVAL: 3s, STADO_HOST: %[1]s}
      - name: f50-svc
        unit: f50-svc.service
        program: /bin/sleep
        args: [infinity]
`

// The host processes pass every 3 s (50 hosts on CI's 2 cores) and their
// beacons stay trusted for 30 s, so a loaded machine that delays a pass does
// not send its host to a full verify; the journey waits for the beacons to
// show each change before it plans from them.

// f50List is what the journey reads of service list --json.
type f50List struct {
	Services []struct {
		Host    string `json:"host"`
		Service string `json:"service"`
		State   string `json:"state"`
		File    *struct {
			Drift  bool   `json:"drift"`
			Absent bool   `json:"absent"`
			Reason string `json:"reason"`
		} `json:"file"`
	} `json:"services"`
}

// f50Cycle is what the journey reads of a cycle.
type f50Cycle struct {
	Kind   string         `json:"kind"`
	ID     string         `json:"id"`
	Start  time.Time      `json:"start"`
	End    time.Time      `json:"end"`
	Counts map[string]int `json:"counts"`
	Rows   []struct {
		Host    string `json:"host"`
		Service string `json:"service"`
		Action  string `json:"action"`
		Refusal *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"refusal"`
		Evidence struct {
			Verify struct {
				Reachable bool `json:"reachable"`
				ReachOnly bool `json:"reach_only"`
			} `json:"verify"`
		} `json:"evidence"`
		Result *struct {
			OK    bool `json:"ok"`
			Clean bool `json:"clean"`
		} `json:"result"`
	} `json:"rows"`
}

func TestFiftyHostsABrokenQuarterIsPlannedFromBeaconsAndRepaired(t *testing.T) {
	bed := testbed.Shared(t, f50Hosts)
	hosts := bed.Hosts()[:f50Hosts]
	bin := testbed.BuildStado(t)
	bed.InstallStado(t, bin)
	store := "file://" + bed.NewStore(t)
	c := newCLI(t, bed, store)
	const unitFile = "/etc/systemd/system/f50-svc.service"
	ctx := context.Background()
	onEveryHost := func(argv ...string) {
		var wg sync.WaitGroup
		for _, h := range hosts {
			wg.Go(func() { bed.Exec(ctx, h, argv...) })
		}
		wg.Wait()
	}
	t.Cleanup(func() {
		onEveryHost("sh", "-c", "systemctl disable --now f50-stado.service f50-svc.service; rm -f /etc/systemd/system/f50-stado.service "+unitFile+
			"; systemctl daemon-reload; systemctl reset-failed 'f50-*'")
	})

	var doc strings.Builder
	doc.WriteString(f50Head)
	for _, h := range hosts {
		fmt.Fprintf(&doc, f50Target, h.Name, h.Addr, store)
	}
	f := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(f, []byte(doc.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	c.mustRun(t, "registry", "push", f, "--reason", "the fleet-size journey")
	start := time.Now()
	c.mustRun(t, "service", "ensure", "f50-stado", "--all", "--reason", "the host processes")
	c.mustRun(t, "service", "ensure", "f50-svc", "--all", "--reason", "the service under test")
	t.Logf("ensured 2 services on %d hosts in %.1fs", len(hosts), time.Since(start).Seconds())

	// A quarter of the fleet broken, four hosts each way: hosts 2, 6, 10, …
	stopped, drifted, deleted := map[string]bool{}, map[string]bool{}, map[string]bool{}
	var broken []string
	for k := 2; len(broken) < 12; k += 4 {
		h := bed.Host(k)
		broken = append(broken, h.Name)
		var script string
		switch len(broken) - 1 {
		case 0, 1, 2, 3:
			stopped[h.Name], script = true, "systemctl stop f50-svc.service"
		case 4, 5, 6, 7:
			drifted[h.Name], script = true, "echo '# edited by hand' >> "+unitFile
		default:
			deleted[h.Name], script = true, "systemctl stop f50-svc.service && rm -f "+unitFile+" && systemctl daemon-reload"
		}
		if _, errOut, err := bed.Exec(ctx, h, "sh", "-c", script); err != nil {
			t.Fatalf("%s: %s: %v %s", h.Name, script, err, errOut)
		}
	}

	// The read half says what broke, from the beacons alone.
	eventually(t, 90*time.Second, "the beacons show the broken quarter and the rest as declared", func() (bool, string) {
		var l f50List
		if err := json.Unmarshal([]byte(c.mustRun(t, "service", "list", "--json")), &l); err != nil {
			return false, err.Error()
		}
		seen := 0
		for _, s := range l.Services {
			if s.Service != "f50-svc" {
				continue
			}
			seen++
			file := s.File
			if file == nil {
				return false, s.Host + ": no file check in its beacon yet (state " + s.State + ")"
			}
			var ok bool
			switch {
			case stopped[s.Host]:
				ok = s.State == "inactive" && !file.Drift
			case drifted[s.Host]:
				ok = s.State == "active" && file.Drift && !file.Absent && file.Reason != ""
			case deleted[s.Host]:
				ok = s.State == "missing" && file.Drift && file.Absent
			default:
				ok = s.State == "active" && !file.Drift
			}
			if !ok {
				return false, fmt.Sprintf("%s: %s, file %+v", s.Host, s.State, *file)
			}
		}
		return seen == len(hosts), fmt.Sprintf("%d rows", seen)
	})

	// Report: exactly the broken quarter, planned from the beacons.
	code, out, errOut := c.run(t, "optimize", "run", "--mode", "report", "--json")
	if code != 0 {
		t.Fatalf("report: exit %d\n%s\n%s", code, out, errOut)
	}
	rep := f50Decode(t, out)
	t.Logf("report cycle at %d hosts, cold connections: %v in %s", len(hosts), rep.Counts, rep.End.Sub(rep.Start))
	var acting []string
	for _, r := range rep.Rows {
		if r.Refusal != nil {
			t.Errorf("refused: %s on %s: %s %s", r.Service, r.Host, r.Refusal.Code, r.Refusal.Message)
		}
		if !r.Evidence.Verify.Reachable || !r.Evidence.Verify.ReachOnly {
			t.Errorf("%s on %s was not planned from its beacon: verify evidence %+v", r.Service, r.Host, r.Evidence.Verify)
		}
		if r.Action == "none" {
			continue
		}
		acting = append(acting, r.Host)
		want := ""
		switch {
		case stopped[r.Host]:
			want = "start"
		case drifted[r.Host]:
			want = "reinstall"
		case deleted[r.Host]:
			want = "restore"
		}
		if r.Service != "f50-svc" || r.Action != want {
			t.Errorf("%s on %s: %s, want %q", r.Service, r.Host, r.Action, want)
		}
	}
	slices.Sort(acting)
	want := slices.Clone(broken)
	slices.Sort(want)
	if !slices.Equal(acting, want) {
		t.Fatalf("the report acts on %v, want exactly %v", acting, want)
	}

	// Enforce repairs them.
	code, out, errOut = c.run(t, "optimize", "run", "--mode", "enforce", "--json")
	if code != 0 {
		t.Fatalf("enforce: exit %d\n%s\n%s", code, out, errOut)
	}
	enf := f50Decode(t, out)
	t.Logf("enforcing cycle: %v in %s", enf.Counts, enf.End.Sub(enf.Start))
	done := 0
	for _, r := range enf.Rows {
		if r.Action != "none" && r.Refusal == nil {
			if r.Result == nil || !r.Result.OK || !r.Result.Clean {
				t.Errorf("%s on %s: %s not done clean: %+v", r.Service, r.Host, r.Action, r.Result)
			}
			done++
		}
	}
	if done != len(broken) {
		t.Errorf("%d actions done, want %d", done, len(broken))
	}

	// On the hosts: every broken host runs the unit from the declared bytes.
	declared, err := bed.ReadFile(bed.Host(1), unitFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range broken {
		h := f50Host(t, hosts, name)
		state, _, _ := bed.Exec(ctx, h, "systemctl", "is-active", "f50-svc.service")
		body, err := bed.ReadFile(h, unitFile)
		if strings.TrimSpace(state) != "active" || err != nil || string(body) != string(declared) {
			t.Errorf("%s after enforce: %s, file %v:\n%s", name, strings.TrimSpace(state), err, body)
		}
	}

	// The beacons catch up with the repairs before a cycle with nothing
	// to do is measured.
	eventually(t, 90*time.Second, "the beacons show every host as declared", func() (bool, string) {
		var l f50List
		if err := json.Unmarshal([]byte(c.mustRun(t, "service", "list", "--json")), &l); err != nil {
			return false, err.Error()
		}
		for _, s := range l.Services {
			if s.State != "active" || s.File == nil || s.File.Drift {
				return false, fmt.Sprintf("%s on %s: %s, file %+v", s.Service, s.Host, s.State, s.File)
			}
		}
		return len(l.Services) == 2*len(hosts), fmt.Sprintf("%d rows", len(l.Services))
	})
	f50MeasureNothingToDo(t, c, bin)
}

// f50MeasureNothingToDo logs the wall time of a report cycle with nothing
// to do, as a whole process, cold (no keeper) and warm (through a keeper
// of the test's own, started and ended by pid, which holds one connection
// per host from a first run). Measured, not asserted.
func f50MeasureNothingToDo(t *testing.T, c *cli, bin string) {
	t.Helper()
	timed := func(cl *cli) time.Duration {
		t.Helper()
		begin := time.Now()
		code, out, errOut := cl.run(t, "optimize", "run", "--mode", "report", "--json")
		took := time.Since(begin)
		if code != 0 {
			t.Fatalf("report: exit %d\n%s", code, errOut)
		}
		if cyc := f50Decode(t, out); cyc.Counts["none"] != len(cyc.Rows) {
			t.Fatalf("a cycle after enforce has something to do: %v", cyc.Counts)
		}
		return took
	}
	t.Logf("report cycle with nothing to do, cold: %s", timed(c))

	warm := &cli{bin: c.bin}
	home := ""
	for _, kv := range c.env {
		if kv != "STADO_NO_KEEPER=1" {
			warm.env = append(warm.env, kv)
		}
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	sock := filepath.Join(home, ".stado", "run", "keeper.sock")
	keeper := exec.Command(bin, "host", "keeper", "--idle", "2m", "--socket", sock)
	keeper.Env = warm.env
	if err := keeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = keeper.Process.Kill(); _ = keeper.Wait() })
	eventually(t, 30*time.Second, "the keeper's socket", func() (bool, string) {
		_, err := os.Stat(sock)
		return err == nil, fmt.Sprint(err)
	})
	t.Logf("report cycle with nothing to do, first through the keeper (it dials): %s", timed(warm))
	var runs []string
	for range 3 {
		runs = append(runs, timed(warm).Round(time.Millisecond).String())
	}
	t.Logf("report cycle with nothing to do at %d hosts, warm (whole process, kept connections): %s", f50Hosts, strings.Join(runs, ", "))
}

func f50Decode(t *testing.T, out string) f50Cycle {
	t.Helper()
	var c f50Cycle
	if err := json.Unmarshal([]byte(out), &c); err != nil || c.Kind != autonomy.CycleKind {
		t.Fatalf("not one cycle document (%v):\n%s", err, out)
	}
	return c
}

func f50Host(t *testing.T, hosts []testbed.Host, name string) testbed.Host {
	t.Helper()
	for _, h := range hosts {
		if h.Name == name {
			return h
		}
	}
	t.Fatalf("no host %s", name)
	return testbed.Host{}
}
