package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/register"
	"github.com/wisent/stado/resolver"
	"github.com/wisent/stado/store"
	"github.com/wisent/stado/tests/testbed"
)

// The several-hosts journey: one product, ah-api, runs on three testbed
// hosts, each with its own directory entry and its own address: host1's
// copy listens on 127.0.0.1 only, host2's on its target address (the entry
// declares none), host3's on an address its entry declares. Each host's
// `stado host run` asks only its own copy. host3's copy holds every request
// (its marker exists there only): host3 repairs and restarts it, while the
// copies on host1 and host2 keep their MainPID. Before host3's process runs,
// a caller that is none of the three resolves to host1, the first host whose
// fresh beacon reads the answer successful, though host3 comes first in the
// directory.

const hostsSite = `version: 1
products:
  - name: ah-api
    units: {systemd: ah-api.service}
    program: /usr/local/bin/ah-answering-fixture
    answering: {method: GET, path: /work, repair: [ah-unmark]}
steps:
  ah-unmark:
    linux: {argv: [/bin/rm, -f, /var/tmp/ah-hold.marker], timeout_seconds: 5}
`

const hostsFleet = `version: 1
service_resolver: {refresh_seconds: 2}
directory:
  - {service: ah-api, host: %[1]s, address: %[2]s, port: 19481}
  - {service: ah-api, host: %[3]s, address: 127.0.0.1, port: 19481}
  - {service: ah-api, host: %[4]s, port: 19481}
targets:
%[5]s`

const hostsTarget = `  - name: %[1]s
    ssh: {address: %[2]s, port: 22, user: root}
    os: linux
    services:
      - name: ah-stado
        unit: ah-stado.service
        program: /usr/local/bin/stado
        args: [host, run]
        env: {STADO_STORE: "%[3]s", STADO_INTERVAL: 1s, STADO_HOST: %[1]s, HOME: /var/tmp/ah-home}
      - name: ah-api
        unit: ah-api.service
        program: /usr/local/bin/ah-answering-fixture
        args: [--mode, hold, --marker, /var/tmp/ah-hold.marker, --listen, "%[4]s:19481"]
        product: ah-api
`

func TestAnsweringOnSeveralHostsRecoversOnlyTheHostWhoseCopyStands(t *testing.T) {
	t.Parallel()
	bed := testbed.Shared(t, 3)
	bin := testbed.BuildStado(t)
	bed.InstallStado(t, bin)
	h1, h2, h3 := bed.Host(1), bed.Host(2), bed.Host(3)
	hosts := []testbed.Host{h1, h2, h3}
	ctx := context.Background()

	fixture := filepath.Join(bed.BinDir(), "ah-answering-fixture")
	if out, err := exec.Command("go", "build", "-o", fixture, "./fixtures/answering").CombinedOutput(); err != nil {
		t.Fatalf("build the fixture: %v\n%s", err, out)
	}
	bed.InstallBin(t, fixture)
	storeDir := bed.NewStore(t)
	storeURL := "file://" + storeDir
	c := newCLI(t, bed, storeURL)

	// where each copy listens: host1 on loopback only, host2 at its target
	// address (no address in its entry), host3 at the address its entry names
	listen := map[string]string{h1.Name: "127.0.0.1", h2.Name: h2.Addr, h3.Name: h3.Addr}
	var targets strings.Builder
	for _, h := range hosts {
		fmt.Fprintf(&targets, hostsTarget, h.Name, h.Addr, storeURL, listen[h.Name])
	}
	site := filepath.Join(t.TempDir(), "site.yaml")
	fleet := filepath.Join(t.TempDir(), "fleet.yaml")
	os.WriteFile(site, []byte(hostsSite), 0o644)
	// host3 first in the directory, then host1 (127.0.0.1), then host2
	os.WriteFile(fleet, []byte(fmt.Sprintf(hostsFleet, h3.Name, h3.Addr, h1.Name, h2.Name, targets.String())), 0o644)
	c.mustRun(t, "catalog", "push", site)
	c.mustRun(t, "registry", "push", fleet, "--reason", "several hosts journey")
	t.Cleanup(func() {
		for _, h := range hosts {
			for _, u := range []string{"ah-stado.service", "ah-api.service"} {
				removeUnit(bed, h, u) // its failed state reset by name: a parallel journey's restart counts stay
			}
			bed.Exec(ctx, h, "rm", "-rf", "/var/tmp/ah-home", "/var/tmp/ah-hold.marker")
		}
	})
	for _, h := range hosts {
		bed.Exec(ctx, h, "rm", "-rf", "/var/tmp/ah-home", "/var/tmp/ah-hold.marker")
	}
	// only host3's copy holds its requests
	if err := bed.WriteFile(h3, "/var/tmp/ah-hold.marker", []byte("held\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.mustRun(t, "service", "ensure", "ah-api", "--all", "--reason", "one product on three hosts")
	mainPID := func(h testbed.Host) string {
		out, _, err := bed.Exec(ctx, h, "systemctl", "show", "-p", "MainPID", "--value", "ah-api.service")
		if err != nil {
			t.Fatalf("MainPID on %s: %v", h.Name, err)
		}
		return strings.TrimSpace(out)
	}
	before := map[string]string{}
	for _, h := range hosts {
		if before[h.Name] = mainPID(h); before[h.Name] == "0" || before[h.Name] == "" {
			t.Fatalf("ah-api on %s runs no process", h.Name)
		}
	}

	st, err := store.OpenFileStore(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	block := func(h testbed.Host) (*beacon.Beacon, *beacon.Answering) {
		obj, err := st.Get(ctx, store.BeaconPrefix+h.Name)
		if err != nil {
			return nil, nil
		}
		var b beacon.Beacon
		if json.Unmarshal(obj.Value, &b) != nil {
			return nil, nil
		}
		for _, u := range b.Units {
			if u.Service == "ah-api" {
				return &b, u.Answering
			}
		}
		return &b, nil
	}
	answered := func(a *beacon.Answering) bool {
		return a != nil && a.State == beacon.AnswerFinished && a.Finished.Answered != nil && a.Finished.Answered.Successful
	}
	endpoint := func(h testbed.Host) string { return listen[h.Name] + ":19481" }

	// host1 and host2 run their host process first: each asks its own copy
	// at its own address, and both answer
	for _, h := range []testbed.Host{h1, h2} {
		c.mustRun(t, "service", "ensure", "ah-stado", "--host", h.Name, "--reason", "the host process")
	}
	eventually(t, 60*time.Second, "host1 and host2 answer their own copies", func() (bool, string) {
		var msg []string
		ok := true
		for _, h := range []testbed.Host{h1, h2} {
			_, a := block(h)
			switch {
			case a == nil:
				ok = false
				msg = append(msg, h.Name+": no block")
			case a.Question == nil || a.Question.Endpoint != endpoint(h):
				t.Fatalf("%s asked %+v, want its own copy at %s", h.Name, a.Question, endpoint(h))
			case !answered(a):
				ok = false
				msg = append(msg, h.Name+": "+a.Summary())
			}
		}
		return ok, strings.Join(msg, "; ")
	})
	// a caller with no copy of its own: host3 comes first in the directory
	// but publishes no beacon yet, so the first host that answers is chosen
	var ep resolver.Endpoint
	out := c.mustRun(t, "resolver", "resolve", "ah-api", "--host", "workstation", "--json")
	if err := json.Unmarshal([]byte(out), &ep); err != nil || ep.Host != h1.Name || ep.Choice != resolver.ChoiceAnswering || ep.String() != endpoint(h1) {
		t.Errorf("resolve from a workstation: %+v (%v), want host1's copy at %s chosen as answering", ep, err, endpoint(h1))
	}
	out = c.mustRun(t, "resolver", "resolve", "ah-api", "--host", h2.Name, "--json")
	if err := json.Unmarshal([]byte(out), &ep); err != nil || ep.Host != h2.Name || ep.Choice != resolver.ChoiceOwnHost {
		t.Errorf("resolve from host2: %+v (%v), want its own copy", ep, err)
	}

	// now host3's process: its own copy stands, is repaired and restarted
	c.mustRun(t, "service", "ensure", "ah-stado", "--host", h3.Name, "--reason", "the host process")
	var stood bool
	eventually(t, 90*time.Second, "host3's copy stood, was recovered and answers", func() (bool, string) {
		for _, h := range []testbed.Host{h1, h2} {
			if _, a := block(h); a != nil && a.State == beacon.AnswerStood {
				t.Fatalf("%s's copy stood: %s", h.Name, a.Summary())
			}
		}
		b, a := block(h3)
		if a == nil {
			return false, "host3: no block"
		}
		if a.Question == nil || a.Question.Endpoint != endpoint(h3) {
			t.Fatalf("host3 asked %+v, want its own copy at %s", a.Question, endpoint(h3))
		}
		if a.State == beacon.AnswerStood {
			stood = true
		}
		return stood && answered(a), fmt.Sprintf("host3 pass %d: %s", b.Pass, a.Summary())
	})

	for _, h := range []testbed.Host{h1, h2} {
		if pid := mainPID(h); pid != before[h.Name] {
			t.Errorf("ah-api on %s: MainPID %s, was %s; an untouched host's copy was restarted", h.Name, pid, before[h.Name])
		}
		if data, err := bed.ReadFile(h, "/var/tmp/ah-home/.stado/service-recoveries.jsonl"); err == nil && len(strings.TrimSpace(string(data))) > 0 {
			t.Errorf("%s recorded a recovery:\n%s", h.Name, data)
		}
	}
	if pid := mainPID(h3); pid == before[h3.Name] || pid == "0" {
		t.Errorf("ah-api on host3: MainPID %s, was %s; want a new process", pid, before[h3.Name])
	}
	data, err := bed.ReadFile(h3, "/var/tmp/ah-home/.stado/service-recoveries.jsonl")
	if err != nil {
		t.Fatalf("read host3's register: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var row register.Recovery
	if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &row) != nil {
		t.Fatalf("host3's register holds %d rows, want 1:\n%s", len(lines), data)
	}
	if row.Service != "ah-api" || row.Host != h3.Name || row.Question.Endpoint != endpoint(h3) || !row.Complete ||
		row.Restart == nil || !row.Restart.OK || fmt.Sprint(row.Restart.PID) == before[h3.Name] {
		t.Errorf("host3's register row %+v", row)
	}
}
