package tests

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	etcdtest "github.com/wisent/stado/tests/etcd"
	"github.com/wisent/stado/tests/testbed"
)

// The beacon journey: three hosts run `stado host run` under their own
// systemd, deployed with `stado service ensure`; the read half (service
// list/status, host health, registry doctor) answers from beacons alone.

// cliRun runs the stado binary on the workstation with env and returns its
// exit code, stdout and stderr.
type cli struct {
	bin string
	env []string
}

func newCLI(t *testing.T, bed *testbed.Bed, store string) *cli {
	t.Helper()
	home := t.TempDir()
	return &cli{bin: testbed.BuildStado(t), env: []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"STADO_STORE=" + store,
		"STADO_SSH_CONFIG=" + bed.SSHConfig(),
		"STADO_KNOWN_HOSTS=" + bed.KnownHosts(),
		"STADO_SSH_IDENTITY=" + bed.KeyPath(),
		"STADO_NO_KEEPER=1", // its read half must open no connection at all
	}}
}

func (c *cli) run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, args...)
	cmd.Env = c.env
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run stado %v: %v", args, err)
	}
	return code, out.String(), errb.String()
}

func (c *cli) mustRun(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := c.run(t, args...)
	if code != 0 {
		t.Fatalf("stado %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

type listDoc struct {
	Kind     string `json:"kind"`
	Services []struct {
		Host     string `json:"host"`
		Service  string `json:"service"`
		Unit     string `json:"unit"`
		State    string `json:"state"`
		PID      int    `json:"pid"`
		LastExit *int   `json:"last_exit"`
		Starts   int    `json:"starts"`
		Sentence string `json:"sentence"`
		Beacon   struct {
			Present    bool    `json:"present"`
			Stale      bool    `json:"stale"`
			AgeSeconds float64 `json:"age_seconds"`
			Pass       int64   `json:"pass"`
			Reason     string  `json:"reason"`
		} `json:"beacon"`
	} `json:"services"`
}

func (c *cli) list(t *testing.T) listDoc {
	t.Helper()
	var d listDoc
	if err := json.Unmarshal([]byte(c.mustRun(t, "service", "list", "--json")), &d); err != nil {
		t.Fatalf("decode list: %v", err)
	}
	return d
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	last := ""
	for time.Now().Before(deadline) {
		ok, msg := cond()
		if ok {
			return
		}
		last = msg
		time.Sleep(300 * time.Millisecond)
	}
	t.Fatalf("%s: not within %s; last: %s", what, within, last)
}

const beaconFleet = `version: 1
service_resolver: {refresh_seconds: 5}
targets:
%s`

const beaconTarget = `  - name: %[1]s
    ssh: {address: %[2]s, port: 22, user: root}
    os: linux
    services:
      - name: stado
        unit: %[5]s-stado.service
        program: /usr/local/bin/stado
        args: [host, run, --listen, "%[2]s:%[6]d"]
        env: {STADO_STORE: "%[3]s", STADO_INTERVAL: 1s, STADO_HOST: %[1]s}
        product: stado
      - name: %[5]s-sleeper
        unit: %[5]s-sleeper.service
        program: /bin/sleep
        args: [infinity]
%[4]s`

const beaconCrashy = `      - name: %[1]s-crashy
        unit: %[1]s-crashy.service
        program: /bin/sh
        args: [-c, "echo %[1]s-crashy is dying >&2; sleep 0.3; exit 3"]
`

// Not parallel: it stops sshd on every host and listens on their port 22
// to count connections, which would fail (and count) any other journey's
// SSH meanwhile. Sequential tests run before the parallel ones start.
func TestBeaconJourneyHostsPublishAndTheReadHalfAnswersWithoutSSH(t *testing.T) {
	bed := testbed.Shared(t, 3)
	beaconJourney(t, bed, "file://"+bed.NewStore(t), "bj", 19401, false)
}

// On etcd the beacon carries a lease of the staleness bound: a stopped
// host's beacon expires by itself and its rows read unknown.
func TestBeaconJourneyOnEtcdExpiresAStoppedHostsBeacon(t *testing.T) {
	t.Parallel()
	cluster := etcdtest.Start(t, 1)
	bed := testbed.Shared(t, 3)
	var eps []string
	for _, e := range cluster.Endpoints() {
		eps = append(eps, strings.TrimPrefix(e, "http://"))
	}
	beaconJourney(t, bed, "etcd://"+strings.Join(eps, ",")+"/bj-etcd", "be", 19411, true)
}

// beaconJourney runs the journey with units named prefix-* and host
// processes listening on port. leased says the store expires beacons by
// their lease (etcd); the file-store run also stops every sshd.
func beaconJourney(t *testing.T, bed *testbed.Bed, store, prefix string, port int, leased bool) {
	bin := testbed.BuildStado(t)
	bed.InstallStado(t, bin)
	c := newCLI(t, bed, store)
	hosts := bed.Hosts()[:3]
	crashy := prefix + "-crashy"

	var targets strings.Builder
	for i, h := range hosts {
		extra := ""
		if i == 0 {
			extra = fmt.Sprintf(beaconCrashy, prefix)
		}
		fmt.Fprintf(&targets, beaconTarget, h.Name, h.Addr, store, extra, prefix, port)
	}
	fleet := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(fleet, []byte(fmt.Sprintf(beaconFleet, targets.String())), 0o644); err != nil {
		t.Fatal(err)
	}
	c.mustRun(t, "registry", "push", fleet, "--reason", "beacon journey")
	cleanupUnits(t, bed, hosts, prefix+"-stado.service", prefix+"-sleeper.service", prefix+"-crashy.service")

	// Deploy: the host process first (it is the stado product), then the rest.
	for _, h := range hosts {
		c.mustRun(t, "service", "ensure", "stado", "--host", h.Name, "--reason", "deploy the host process")
		c.mustRun(t, "service", "ensure", prefix+"-sleeper", "--host", h.Name, "--reason", "a sample")
	}
	// ensure of a crash loop reports it failing (exit code nonzero is fine).
	c.run(t, "service", "ensure", crashy, "--host", hosts[0].Name, "--reason", "a crash loop")

	// Every declared healthy service is active within two passes of a beacon.
	eventually(t, 30*time.Second, "every healthy service active", func() (bool, string) {
		d := c.list(t)
		active := 0
		for _, s := range d.Services {
			if s.Service != crashy && s.State == "active" && s.PID > 0 {
				active++
			}
		}
		return active == 2*len(hosts), fmt.Sprintf("%+v", d.Services)
	})
	d := c.list(t)
	for _, s := range d.Services {
		if s.Beacon.Pass > 3 && s.Service != crashy {
			// Published at start and every second: being active needed no
			// more than two passes after the host process started.
			t.Logf("%s/%s active at pass %d", s.Host, s.Service, s.Beacon.Pass)
		}
	}

	// The crash loop is failing, with its exit code and start count.
	eventually(t, 30*time.Second, "crash loop failing", func() (bool, string) {
		for _, s := range c.list(t).Services {
			if s.Service == crashy {
				return s.State == "failing" && s.LastExit != nil && *s.LastExit == 3 && s.Starts >= 2, fmt.Sprintf("%+v", s)
			}
		}
		return false, "no crashy row"
	})
	// A crash loop is truly active for a moment each time it is started
	// (0.3 s; longer on a loaded machine), and a pass may land there, so
	// the status is read until a pass sees it between runs; the start
	// limit ends the loop failing for good within seconds.
	eventually(t, 30*time.Second, "status text of the crash loop", func() (bool, string) {
		status := c.mustRun(t, "service", "status", crashy, "--host", hosts[0].Name)
		for _, want := range []string{"failing", "last exit: 3", "runs no process: its last run exited 3", "stado service logs " + crashy} {
			if !strings.Contains(status, want) {
				return false, fmt.Sprintf("lacks %q:\n%s", want, status)
			}
		}
		return true, ""
	})
	var st struct {
		Hosts []struct {
			State      string `json:"state"`
			LastExit   *int   `json:"last_exit"`
			LastStderr string `json:"last_stderr"`
			Starts     int    `json:"starts"`
		} `json:"hosts"`
	}
	eventually(t, 30*time.Second, "status json of the crash loop", func() (bool, string) {
		st.Hosts = nil
		if err := json.Unmarshal([]byte(c.mustRun(t, "service", "status", crashy, "--json")), &st); err != nil || len(st.Hosts) != 1 {
			t.Fatalf("status json: %v %+v", err, st)
		}
		h := st.Hosts[0]
		return h.State == "failing" && h.LastExit != nil && *h.LastExit == 3 && strings.Contains(h.LastStderr, crashy+" is dying"), fmt.Sprintf("%+v", h)
	})

	if leased {
		packingJourney(t, bed, c, store, hosts, prefix+"-stado.service")
	}

	// Stop one host's stado: after the bound (3 × 1 s) its rows read
	// unknown with the age, never active; the other hosts are unaffected.
	victim := hosts[2]
	if _, errOut, err := bed.Exec(context.Background(), victim, "systemctl", "stop", prefix+"-stado.service"); err != nil {
		t.Fatalf("stop stado on %s: %v %s", victim.Name, err, errOut)
	}
	eventually(t, 20*time.Second, "stopped host reads unknown", func() (bool, string) {
		for _, s := range c.list(t).Services {
			if s.Host != victim.Name {
				continue
			}
			// On the file store the beacon stays and reads stale with its
			// age; on etcd its lease expired and the host has no beacon.
			staleWithAge := s.Beacon.Stale && s.Beacon.AgeSeconds > 3
			expired := leased && !s.Beacon.Present && strings.HasPrefix(s.Beacon.Reason, "no beacon")
			if s.State != "unknown" || !(staleWithAge || expired) {
				return false, fmt.Sprintf("%+v", s)
			}
		}
		return true, ""
	})
	for _, s := range c.list(t).Services {
		switch {
		case s.Host == victim.Name && s.State == "active":
			t.Errorf("stale host reported active: %+v", s)
		case s.Host != victim.Name && s.Service != crashy && s.State != "active":
			t.Errorf("a live host was affected: %+v", s)
		}
	}

	if leased {
		return
	}
	// sshd stopped on every host: the read half still answers and attempts
	// no connection. Our own listeners on every host's port 22 count any.
	var accepted atomic.Int32
	for _, h := range hosts {
		if err := bed.StopSSHD(context.Background(), h); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, h := range hosts {
			bed.StartSSHD(context.Background(), h)
		}
	})
	var listeners []net.Listener
	for _, h := range hosts {
		ln, err := net.Listen("tcp", net.JoinHostPort(h.Addr, "22"))
		if err != nil {
			t.Fatalf("listen on %s:22 after stopping sshd: %v", h.Addr, err)
		}
		listeners = append(listeners, ln)
		go func() {
			for {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				accepted.Add(1)
				conn.Close()
			}
		}()
	}
	for _, args := range [][]string{
		{"service", "list", "--json"},
		{"service", "status", prefix + "-sleeper", "--json"},
		{"host", "health", "--json"},
	} {
		c.mustRun(t, args...)
	}
	if code, out, errOut := c.run(t, "registry", "doctor", "--json"); code != 3 || !strings.Contains(out, "stale_beacon") {
		t.Errorf("doctor: exit %d, want 3 naming the stale host\n%s\n%s", code, out, errOut)
	}
	for _, ln := range listeners {
		ln.Close()
	}
	if n := accepted.Load(); n != 0 {
		t.Fatalf("the read half opened %d connection(s) to port 22", n)
	}
}

// packingJourney turns packing on in the etcd store the hosts publish to:
// refused while an older host's beacon is there, done once it is gone;
// restarted host processes then store their beacons packed, and the read
// half reads every one of them.
func packingJourney(t *testing.T, bed *testbed.Bed, c *cli, storeURL string, hosts []testbed.Host, hostUnit string) {
	t.Helper()
	rest := strings.TrimPrefix(storeURL, "etcd://")
	eps, prefix, _ := strings.Cut(rest, "/")
	ep := "http://" + strings.Split(eps, ",")[0]
	gateway := func(path string, req map[string]any) map[string]any {
		t.Helper()
		body, _ := json.Marshal(req)
		resp, err := http.Post(ep+path, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %d %v", path, resp.StatusCode, err)
		}
		return out
	}
	key := func(k string) string { return base64.StdEncoding.EncodeToString([]byte(prefix + "/" + k)) }
	rawBeacon := func(host string) []byte {
		kvs, _ := gateway("/v3/kv/range", map[string]any{"key": key("beacons/" + host)})["kvs"].([]any)
		if len(kvs) != 1 {
			t.Fatalf("no beacon of %s in etcd", host)
		}
		v, _ := base64.StdEncoding.DecodeString(kvs[0].(map[string]any)["value"].(string))
		return v
	}
	var shown struct {
		Packed     bool `json:"packed"`
		Hosts      int  `json:"hosts"`
		NotReading []struct {
			Host string `json:"host"`
		} `json:"not_reading"`
	}
	if err := json.Unmarshal([]byte(c.mustRun(t, "store", "packing", "--json")), &shown); err != nil || shown.Packed || shown.Hosts != len(hosts) || len(shown.NotReading) != 0 {
		t.Fatalf("store packing: %+v %v; want off, %d hosts, all reading", shown, err, len(hosts))
	}
	// an older host process's beacon names no store_reads
	gateway("/v3/kv/put", map[string]any{"key": key("beacons/old-host"),
		"value": base64.StdEncoding.EncodeToString([]byte(`{"kind":"stado.beacon","version":1,"host":"old-host","stado_version":"0.0.9"}`))})
	code, _, errOut := c.run(t, "store", "packing", "--on", "--json")
	if code != 3 || !strings.Contains(errOut, `"packing_unread"`) || !strings.Contains(errOut, "old-host") {
		t.Fatalf("packing --on beside an older host: exit %d, want 3 packing_unread naming old-host\n%s", code, errOut)
	}
	if err := json.Unmarshal([]byte(c.mustRun(t, "store", "packing", "--json")), &shown); err != nil || shown.Packed {
		t.Fatalf("after the refusal packing reads %+v %v, want off", shown, err)
	}
	gateway("/v3/kv/deleterange", map[string]any{"key": key("beacons/old-host")})
	if err := json.Unmarshal([]byte(c.mustRun(t, "store", "packing", "--on", "--json")), &shown); err != nil || !shown.Packed {
		t.Fatalf("packing --on: %+v %v", shown, err)
	}
	// A host process reads the packing document when it starts (then
	// every five minutes): restart them.
	for _, h := range hosts {
		if _, errOut, err := bed.Exec(context.Background(), h, "systemctl", "restart", hostUnit); err != nil {
			t.Fatalf("restart stado on %s: %v %s", h.Name, err, errOut)
		}
	}
	eventually(t, 30*time.Second, "every beacon stored packed and read back", func() (bool, string) {
		// etcdstore.PackAbove: a beacon under 1 KiB is left as it is
		packed := 0
		for _, h := range hosts {
			raw := rawBeacon(h.Name)
			switch {
			case bytes.HasPrefix(raw, []byte("\x00stado-value\x00l")):
				packed++
			case len(raw) >= 1<<10:
				return false, fmt.Sprintf("beacon of %s stored as %d bytes %.40q", h.Name, len(raw), raw)
			}
		}
		if packed == 0 {
			return false, "no beacon stored packed"
		}
		active := 0
		for _, s := range c.list(t).Services {
			if s.State == "active" {
				active++
			}
		}
		return active >= 2*len(hosts), "not every healthy service reads active"
	})
	c.mustRun(t, "store", "packing", "--off")
}
