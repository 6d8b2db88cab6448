package tests

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/tests/testbed"
)

// verifyDoc is the --json result of service verify.
type verifyDoc struct {
	Kind  string `json:"kind"`
	Hosts []struct {
		Host      string `json:"host"`
		Reachable bool   `json:"reachable"`
		Stage     string `json:"stage"`
		Services  []struct {
			Service    string `json:"service"`
			Loaded     bool   `json:"loaded"`
			State      string `json:"state"`
			FileAbsent bool   `json:"file_absent"`
			Drift      bool   `json:"drift"`
			Diff       string `json:"diff"`
			Port       int    `json:"port"`
			PortState  string `json:"port_state"`
			PortOwners []struct {
				Address string `json:"address"`
				PID     int    `json:"pid"`
				Unit    string `json:"unit"`
			} `json:"port_owners"`
			Evidence struct {
				PID      int `json:"pid"`
				LastExit int `json:"last_exit"`
			} `json:"evidence"`
		} `json:"services"`
	} `json:"hosts"`
}

// Not parallel: it stops host5's sshd, which would fail any other journey
// using host5 meanwhile. Sequential tests run before the parallel ones.
func TestVerifyNamesDriftStoppedDeletedAndUnreachableHostsAndChangesNothing(t *testing.T) {
	w := newWriteBed(t, 5)
	hosts := w.bed.Hosts()[:5]
	const unit = "stado-vj.service"
	cleanupUnits(t, w.bed, hosts, unit)
	svc := dirService{name: "vj", unit: unit, program: sampleProgram, args: []string{"--addr", "ADDR:18311"}, port: 18311}
	w.pushWithDirectory(t, hosts, svc)
	if code, out, errOut := w.run(t, "service", "ensure", "vj", "--all", "--settle", "200ms"); code != 0 {
		t.Fatalf("ensure: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut := w.run(t, "service", "verify", "--json")
	if code != 0 {
		t.Fatalf("verify of a clean fleet: exit %d\n%s\n%s", code, out, errOut)
	}

	ctx := context.Background()
	h1, h2, h3, h4, h5 := hosts[0], hosts[1], hosts[2], hosts[3], hosts[4]
	path := "/etc/systemd/system/" + unit
	// host2: the unit's bytes edited by hand
	orig, err := w.bed.ReadFile(h2, path)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(orig), "Restart=always", "Restart=on-failure", 1)
	if edited == string(orig) {
		t.Fatalf("the rendered unit has no Restart=always to edit:\n%s", orig)
	}
	if err := w.bed.WriteFile(h2, path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	// host3: the unit stopped
	if _, _, err := w.bed.Exec(ctx, h3, "systemctl", "stop", unit); err != nil {
		t.Fatal(err)
	}
	// host4: the unit file deleted (the loaded unit keeps running)
	if _, _, err := w.bed.Exec(ctx, h4, "rm", "-f", path); err != nil {
		t.Fatal(err)
	}
	// host5: sshd stopped
	if err := w.bed.StopSSHD(ctx, h5); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := w.bed.StartSSHD(ctx, h5); err != nil {
			t.Errorf("start sshd on %s again: %v", h5.Name, err)
		}
	})
	before := map[string]int{}
	for _, h := range hosts[:4] {
		before[h.Name] = mainPID(t, w.bed, h, unit)
	}

	code, out, errOut = w.run(t, "service", "verify", "--json")
	if code != 1 {
		t.Errorf("verify with an unreachable host: exit %d, want 1\n%s", code, errOut)
	}
	var doc verifyDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Kind != "stado.service.verify" || len(doc.Hosts) != 5 {
		t.Fatalf("not one verify document of 5 hosts (%v):\n%s", err, out)
	}
	by := map[string]int{}
	for i, h := range doc.Hosts {
		by[h.Host] = i
	}
	one := func(h testbed.Host) (reachable bool, stage string, state string, absent, drift bool, diff, port string) {
		hv := doc.Hosts[by[h.Name]]
		if !hv.Reachable {
			return false, hv.Stage, "", false, false, "", ""
		}
		if len(hv.Services) != 1 {
			t.Fatalf("%s: %d services", h.Name, len(hv.Services))
		}
		s := hv.Services[0]
		return true, "", s.State, s.FileAbsent, s.Drift, s.Diff, s.PortState
	}
	if ok, _, state, absent, drift, _, port := one(h1); !ok || state != "active" || absent || drift || port != "owned" {
		t.Errorf("%s (clean): reachable %v, %s, absent %v, drift %v, port %s", h1.Name, ok, state, absent, drift, port)
	}
	if ok, _, state, absent, drift, diff, port := one(h2); !ok || state != "active" || absent || !drift || port != "owned" ||
		!strings.Contains(diff, "-Restart=on-failure") || !strings.Contains(diff, "+Restart=always") {
		t.Errorf("%s (drifted): reachable %v, %s, absent %v, drift %v, port %s, diff:\n%s", h2.Name, ok, state, absent, drift, port, diff)
	}
	if ok, _, state, absent, drift, _, port := one(h3); !ok || state != "inactive" || absent || drift || port != "free" {
		t.Errorf("%s (stopped): reachable %v, %s, absent %v, drift %v, port %s", h3.Name, ok, state, absent, drift, port)
	}
	if ok, _, state, absent, drift, _, _ := one(h4); !ok || !absent || !drift || state != "active" {
		t.Errorf("%s (deleted file): reachable %v, %s, absent %v, drift %v", h4.Name, ok, state, absent, drift)
	}
	if ok, stage, _, _, _, _, _ := one(h5); ok || stage != "connect" {
		t.Errorf("%s (sshd stopped): reachable %v, stage %q, want connect", h5.Name, ok, stage)
	}

	// text mode shows the drift as a diff and names the stage
	_, text, _ := w.run(t, "service", "verify", "vj")
	for _, want := range []string{
		h2.Name + "  reachable", "unit file: drifted from the declaration at " + path, "    -Restart=on-failure", "    +Restart=always",
		h3.Name + "  reachable", "vj (" + unit + "): needs attention, inactive",
		"unit file: absent at " + path,
		h5.Name + "  unreachable at connect",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("verify text lacks %q:\n%s", want, text)
		}
	}
	// verify read only: nothing restarted, started or rewritten
	for _, h := range hosts[:4] {
		if got := mainPID(t, w.bed, h, unit); got != before[h.Name] {
			t.Errorf("%s: MainPID %d after verify, was %d", h.Name, got, before[h.Name])
		}
	}
	if got, _ := w.bed.ReadFile(h2, path); string(got) != edited {
		t.Errorf("%s: verify changed the edited unit file", h2.Name)
	}
	if _, err := w.bed.ReadFile(h4, path); err == nil {
		t.Errorf("%s: verify recreated the deleted unit file", h4.Name)
	}

	// one host, one name: a clean host exits 0
	if code, out, errOut := w.run(t, "service", "verify", "vj", "--host", h1.Name); code != 0 || !strings.Contains(out, "vj ("+unit+"): clean, active pid ") {
		t.Errorf("verify of the clean host: exit %d\n%s\n%s", code, out, errOut)
	}
	// only findings, every host reachable: needs_attention, exit 3
	if code, _, errOut := w.run(t, "service", "verify", "--host", h3.Name, "--json"); code != 3 || !strings.Contains(errOut, "needs_attention") {
		t.Errorf("verify of the stopped host: exit %d\n%s", code, errOut)
	}
}

// BenchmarkServiceVerifyColdOnTenHosts is one `stado service verify` of ten
// testbed hosts, each declaring one running service with a directory port,
// every host dialed fresh (no keeper): the sweep the autonomy cycle makes.
func BenchmarkServiceVerifyColdOnTenHosts(b *testing.B) {
	w := newWriteBed(b, 10)
	hosts := w.bed.Hosts()[:10]
	const unit = "stado-vj-bench.service"
	cleanupUnits(b, w.bed, hosts, unit)
	w.pushWithDirectory(b, hosts, dirService{name: "vj-bench", unit: unit, program: sampleProgram, args: []string{"--addr", "ADDR:18312"}, port: 18312})
	if code, out, errOut := w.run(b, "service", "ensure", "vj-bench", "--all", "--settle", "200ms"); code != 0 {
		b.Fatalf("ensure: exit %d\n%s\n%s", code, out, errOut)
	}
	// a converged ensure is the same fleet's one-call-per-host baseline
	for _, c := range []struct {
		name string
		args []string
	}{
		{"verify", []string{"service", "verify", "--json"}},
		{"ensure converged", []string{"service", "ensure", "vj-bench", "--all", "--json"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for n := 0; n < b.N; n++ {
				if code, out, errOut := w.run(b, c.args...); code != 0 {
					b.Fatalf("%s: exit %d\n%s\n%s", c.name, code, out, errOut)
				}
			}
		})
	}
}
