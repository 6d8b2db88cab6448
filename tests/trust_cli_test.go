package tests

// Trust boundaries through the stado binary (issue 17): a beacon cannot make
// itself trusted, removing lock files loses no acknowledged push, and no
// password reaches the output. These journeys need no simulated host: they
// run the built binary against a file store in a temporary directory.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
	"github.com/wisent/stado/tests/testbed"
)

// stadoRun runs the binary with a HOME of its own and returns its exit
// code, stdout and stderr.
func stadoRun(t *testing.T, bin, home string, stdin []byte, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin", "STADO_WRITER=trust-test"}
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	return code, out.String(), errb.String()
}

const trustFleet = `version: 1
targets:
- name: honest
  os: linux
  services:
  - {name: a, unit: a.service, program: /bin/a}
- name: ahead
  os: linux
  services:
  - {name: a, unit: a.service, program: /bin/a}
- name: slightly-ahead
  os: linux
  services:
  - {name: a, unit: a.service, program: /bin/a}
- name: self-trusting
  os: linux
  services:
  - {name: a, unit: a.service, program: /bin/a}
- name: huge-interval
  os: linux
  services:
  - {name: a, unit: a.service, program: /bin/a}
- name: year-ahead
  os: linux
  services:
  - {name: a, unit: a.service, program: /bin/a}
- name: year-2318
  os: linux
  services:
  - {name: a, unit: a.service, program: /bin/a}
- name: year-9999
  os: linux
  services:
  - {name: a, unit: a.service, program: /bin/a}
- name: oversized
  os: linux
  services:
  - {name: a, unit: a.service, program: /bin/a}
`

// A beacon dated in the future, or one that sets itself an enormous bound,
// reads unknown through service list and host health, naming why; host
// health shows the skew. An honest fresh beacon reads active.
func TestBeaconCannotMakeItselfTrustedThroughTheBinary(t *testing.T) {
	bin := testbed.BuildStado(t)
	home, dir := t.TempDir(), t.TempDir()
	storeURL := "file://" + dir
	fleet := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(fleet, []byte(trustFleet), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := stadoRun(t, bin, home, nil, "registry", "push", fleet, "--store", storeURL); code != 0 {
		t.Fatalf("push: exit %d: %s", code, errOut)
	}
	st, err := store.OpenFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	for _, tc := range []struct {
		host              string
		at                time.Time
		staleAfter, every float64
		state, reason     string
		pad               int // bytes of sentence, to make the beacon large
	}{
		// 5 s old, bound 45 s: trusted
		{"honest", now.Add(-5 * time.Second), 45, 15, "active", "", 0},
		// dated 2 minutes ahead: beyond the skew a reader allows
		{"ahead", now.Add(2 * time.Minute), 45, 15, "unknown", "in the future", 0},
		// dated 5 s ahead: tolerated skew
		{"slightly-ahead", now.Add(5 * time.Second), 45, 15, "active", "", 0},
		// an hour old with a bound of a year: capped
		{"self-trusting", now.Add(-time.Hour), 365 * 24 * 3600, 15, "unknown", "stale after 10m0s", 0},
		// an hour old with an interval of a billion seconds: capped
		{"huge-interval", now.Add(-time.Hour), 0, 1e9, "unknown", "stale after 10m0s", 0},
		// a year ahead
		{"year-ahead", now.AddDate(1, 0, 0), 45, 15, "unknown", "in the future", 0},
		// dated past what a duration spans (issue 24): still ahead, never fresh
		{"year-2318", time.Date(2318, 12, 3, 0, 0, 0, 0, time.UTC), 45, 15, "unknown", "in the future", 0},
		{"year-9999", time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), 1e300, 1e300, "unknown", "in the future", 0},
		// fresh, but over the beacon size limit: unreadable, never loaded
		{"oversized", now.Add(-5 * time.Second), 45, 15, "unknown", "limit", beacon.MaxBytes},
	} {
		b := beacon.Beacon{Kind: beacon.Kind, Version: beacon.FormatVersion, Host: tc.host, Pass: 1, At: tc.at,
			IntervalSeconds: tc.every, StaleAfterSeconds: tc.staleAfter,
			Units: []beacon.UnitReport{{Service: "a", Unit: "a.service", State: beacon.StateActive, PID: 42, Sentence: strings.Repeat("x", tc.pad)}}}
		data, _ := json.Marshal(b)
		if _, err := st.Put(context.Background(), store.BeaconPrefix+tc.host, data, store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Run(tc.host, func(t *testing.T) {
			code, out, errOut := stadoRun(t, bin, home, nil, "service", "list", "--host", tc.host, "--json", "--store", storeURL)
			if code != 0 {
				t.Fatalf("service list: exit %d: %s", code, errOut)
			}
			var list struct {
				Services []beacon.Row `json:"services"`
			}
			if err := json.Unmarshal([]byte(out), &list); err != nil || len(list.Services) != 1 {
				t.Fatalf("service list %s: %v", out, err)
			}
			r := list.Services[0]
			if r.State != tc.state || !strings.Contains(r.Beacon.Reason, tc.reason) {
				t.Errorf("row reads %s (%q), want %s with %q", r.State, r.Beacon.Reason, tc.state, tc.reason)
			}
			code, out, errOut = stadoRun(t, bin, home, nil, "host", "health", "--host", tc.host, "--json", "--store", storeURL)
			if code != 0 && code != 3 {
				t.Fatalf("host health: exit %d: %s", code, errOut)
			}
			if tc.at.After(now) && !strings.Contains(out, `"skew_seconds"`) {
				t.Errorf("host health does not show the skew: %s", out)
			}
			// a reader's own bound does not make a beacon dated ahead fresh
			code, out, errOut = stadoRun(t, bin, home, nil, "service", "list", "--host", tc.host, "--stale-after", "1s", "--json", "--store", storeURL)
			if code != 0 {
				t.Fatalf("service list --stale-after 1s: exit %d: %s", code, errOut)
			}
			if tc.state == "unknown" && strings.Contains(out, `"state": "active"`) {
				t.Errorf("with --stale-after 1s the row reads active: %s", out)
			}
		})
	}
}

// Sixteen stado processes at a time each pull the registry, add a service
// and push it back with --expect-revision, eight times each, retrying on a
// conflict, while a cleaner removes the store's lock files every 2 ms
// without holding them. Every acknowledged push is in the final document.
func TestConcurrentPushesThroughTheBinaryLoseNothingWhenLockFilesAreRemoved(t *testing.T) {
	bin := testbed.BuildStado(t)
	home, dir := t.TempDir(), t.TempDir()
	storeURL := "file://" + dir
	seed := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(seed, []byte("version: 1\ntargets:\n- name: h\n  os: linux\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := stadoRun(t, bin, home, nil, "registry", "push", seed, "--store", storeURL); code != 0 {
		t.Fatalf("push: exit %d: %s", code, errOut)
	}
	var removed atomic.Int64
	stop, cleaned := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(cleaned)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			locks, _ := filepath.Glob(filepath.Join(dir, ".lock*"))
			for _, l := range locks {
				if os.Remove(l) == nil {
					removed.Add(1)
				}
			}
		}
	}()
	const writers, cycles = 16, 8
	var (
		mu    sync.Mutex
		acked = map[int64]string{}
		twice []string
	)
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work := t.TempDir()
			for c := 0; c < cycles; c++ {
				name := fmt.Sprintf("w%02d-c%d", w, c)
				for attempt := 0; ; attempt++ {
					if attempt > 200 {
						t.Errorf("%s: no push landed in 200 attempts", name)
						return
					}
					code, out, errOut := stadoRun(t, bin, home, nil, "registry", "pull", "--json", "--store", storeURL)
					if code != 0 {
						t.Errorf("pull: exit %d: %s", code, errOut)
						return
					}
					var pulled struct {
						Revision int64              `json:"revision"`
						Document *registry.Document `json:"document"`
					}
					if err := json.Unmarshal([]byte(out), &pulled); err != nil {
						t.Errorf("pull: %v", err)
						return
					}
					d := pulled.Document
					d.Targets[0].Services = append(d.Targets[0].Services, registry.Service{Name: name, Unit: name + ".service", Program: "/bin/true"})
					b, _ := json.Marshal(d)
					f := filepath.Join(work, "fleet.json")
					if err := os.WriteFile(f, b, 0o600); err != nil {
						t.Error(err)
						return
					}
					code, out, errOut = stadoRun(t, bin, home, nil, "registry", "push", f, "--expect-revision", fmt.Sprint(pulled.Revision), "--json", "--store", storeURL)
					if code == 3 && strings.Contains(errOut, `"conflict"`) {
						continue
					}
					if code != 0 {
						t.Errorf("push: exit %d: %s", code, errOut)
						return
					}
					var pushed struct {
						Revision int64 `json:"revision"`
						Meta     struct {
							Revision int64 `json:"revision"`
						} `json:"meta"`
					}
					_ = json.Unmarshal([]byte(out), &pushed)
					rev := max(pushed.Revision, pushed.Meta.Revision)
					mu.Lock()
					if prev, ok := acked[rev]; ok {
						twice = append(twice, fmt.Sprintf("revision %d acknowledged to %s and %s", rev, prev, name))
					}
					acked[rev] = name
					mu.Unlock()
					break
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-cleaned
	st, err := store.OpenFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	final, _, err := registry.Load(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, s := range final.Targets[0].Services {
		have[s.Name] = true
	}
	var lost []string
	for _, name := range acked {
		if !have[name] {
			lost = append(lost, name)
		}
	}
	if len(lost) > 0 || len(twice) > 0 {
		t.Fatalf("%d acknowledged pushes lost (%v); %v", len(lost), lost, twice)
	}
	if len(have) != writers*cycles {
		t.Fatalf("%d services in the document, want %d", len(have), writers*cycles)
	}
	if removed.Load() == 0 {
		t.Fatal("the cleaner removed no lock file; the journey proved nothing")
	}
	t.Logf("%d pushes acknowledged through the binary, %d lock files removed meanwhile", len(acked), removed.Load())
}

// No form of an etcd password reaches stdout or stderr, in text or --json,
// whatever part of opening the store fails.
func TestEtcdPasswordNeverReachesOutputThroughTheBinary(t *testing.T) {
	bin := testbed.BuildStado(t)
	home := t.TempDir()
	for _, tc := range []struct {
		name, url string
		leaks     []string
	}{
		// a '/' in the password
		{"slash", "etcd://alice:pa/Zq9x@127.0.0.1:1/p", []string{"pa/Zq9x", "Zq9x"}},
		// a '?' in the password
		{"question mark", "etcd://alice:pa?Zq9x@127.0.0.1:1/p", []string{"pa?Zq9x", "Zq9x"}},
		// a refused password= option
		{"password option", "etcd://127.0.0.1:1/p?password=hunter2", []string{"hunter2"}},
		// a plain password and an unreachable member
		{"unreachable", "etcd://alice:plainpw@127.0.0.1:1/p?dial_timeout=1s", []string{"plainpw"}},
		// an unknown option repeating the password
		{"unknown option", "etcd://alice:s3cret@127.0.0.1:1/p?bogus=s3cret", []string{"s3cret"}},
	} {
		for _, asJSON := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s json=%v", tc.name, asJSON), func(t *testing.T) {
				args := []string{"service", "list", "--store", tc.url}
				if asJSON {
					args = append(args, "--json")
				}
				code, out, errOut := stadoRun(t, bin, home, nil, args...)
				if code == 0 {
					t.Fatal("a store nobody answers for was read")
				}
				for _, leak := range tc.leaks {
					if strings.Contains(out+errOut, leak) {
						t.Errorf("output leaks %q: %s%s", leak, out, errOut)
					}
				}
			})
		}
	}
}

// A registry writer declares a command alert; an operator runs a report
// cycle on a workstation (issue 24). The cycle alerts its refusal but runs
// nothing the registry declares: the command is recorded as not run.
func TestAReportCycleRunsNoCommandTheRegistryDeclares(t *testing.T) {
	bin := testbed.BuildStado(t)
	home, dir := t.TempDir(), t.TempDir()
	planted := filepath.Join(t.TempDir(), "planted-by-the-registry")
	fleet := filepath.Join(t.TempDir(), "fleet.yaml")
	doc := fmt.Sprintf(`version: 1
targets:
- name: host1
  os: linux
  ssh: {address: 127.0.0.1, port: 1}
  alerts:
  - name: pager
    command:
      argv: [/bin/sh, -c, "echo pwned > %s"]
  services:
  - {name: a, unit: a.service, program: /bin/a}
`, planted)
	if err := os.WriteFile(fleet, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	storeURL := "file://" + dir
	if code, _, errOut := stadoRun(t, bin, home, nil, "registry", "push", fleet, "--store", storeURL); code != 0 {
		t.Fatalf("push: exit %d: %s", code, errOut)
	}
	code, out, errOut := stadoRun(t, bin, home, nil, "optimize", "run", "--mode", "report", "--no-keeper", "--json", "--store", storeURL)
	if code != 0 && code != 3 {
		t.Fatalf("optimize run: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(planted); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the registry's command ran on the workstation: %v", err)
	}
	if !strings.Contains(out, `"answer": "not run"`) || !strings.Contains(out, "only on the host that owns the declaration") {
		t.Fatalf("the cycle does not record the command alert as not run:\n%s", out)
	}
}

// Issue 24's document and URL cases, replayed through the binary: each is
// refused before it costs more than its bytes, naming what is wrong.
func TestHostileDocumentsAndURLsAreRefusedThroughTheBinary(t *testing.T) {
	bin := testbed.BuildStado(t)
	home, work := t.TempDir(), t.TempDir()
	// a flow sequence of 16 M scalars inside the 32 MiB size limit
	flow := append([]byte("version: 1\ntargets: ["), bytes.Repeat([]byte("1,"), 16<<20-16)...)
	flow = append(flow, "1]\n"...)
	for _, tc := range []struct {
		name string
		doc  []byte
		want string
	}{
		// a fraction where an integer is expected, as JSON refuses it
		{"fraction", []byte("version: 1.5\ntargets: []\n"), "version"},
		// expands without bound when parsed: refused by the parse budget
		{"flow of 16M scalars", flow, "limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(work, strings.ReplaceAll(tc.name, " ", "-")+".yaml")
			if err := os.WriteFile(file, tc.doc, 0o600); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := stadoRun(t, bin, home, nil, "registry", "validate", file, "--json")
			if code != 3 || !strings.Contains(out+errOut, tc.want) {
				t.Fatalf("registry validate: exit %d, want 3 naming %q:\n%s%s", code, tc.want, out, errOut)
			}
		})
	}
	// an etcd URL whose dial timeout would hang the command
	code, out, errOut := stadoRun(t, bin, home, nil, "service", "list", "--json", "--store", "etcd://127.0.0.1:1/x?dial_timeout=1000h")
	if code == 0 || !strings.Contains(out+errOut, "dial_timeout") {
		t.Fatalf("a 1000h dial timeout: exit %d:\n%s%s", code, out, errOut)
	}
}

// stado desktop --open starts the browser with an address every user can
// read through ps (issue 24): it carries a one-time code, never the token
// the command prints.
func TestDesktopOpenHandsTheBrowserNoToken(t *testing.T) {
	bin := testbed.BuildStado(t)
	home, dir, tools := t.TempDir(), t.TempDir(), t.TempDir()
	fleet := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(fleet, []byte(trustFleet), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := stadoRun(t, bin, home, nil, "registry", "push", fleet, "--store", "file://"+dir); code != 0 {
		t.Fatalf("push: exit %d: %s", code, errOut)
	}
	argvFile := filepath.Join(tools, "argv")
	opener := "#!/bin/sh\nprintf '%s\\n' \"$@\" > " + argvFile + "\n"
	if err := os.WriteFile(filepath.Join(tools, "xdg-open"), []byte(opener), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "desktop", "--open", "--listen", "127.0.0.1:0", "--json", "--store", "file://"+dir)
	cmd.Env = []string{"HOME=" + home, "PATH=" + tools + ":/usr/bin:/bin"}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var announced struct {
		URL string `json:"url"`
	}
	if err := json.NewDecoder(stdout).Decode(&announced); err != nil || !strings.Contains(announced.URL, "token=") {
		t.Fatalf("desktop announced %+v: %v", announced, err)
	}
	token := announced.URL[strings.Index(announced.URL, "token=")+len("token="):]
	var argv []byte
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if argv, err = os.ReadFile(argvFile); err == nil && len(argv) > 0 {
			break
		}
	}
	if len(argv) == 0 {
		t.Fatal("the browser opener was never started")
	}
	if strings.Contains(string(argv), token) || strings.Contains(string(argv), "token=") || !strings.Contains(string(argv), "once=") {
		t.Fatalf("the browser's argv %q carries the token, or no one-time code", argv)
	}
}
