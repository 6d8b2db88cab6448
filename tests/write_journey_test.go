package tests

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
	"github.com/wisent/stado/tests/testbed"
	"github.com/wisent/stado/units"
)

// sampleProgram is where the sample service sits inside every host (the
// bed's bin dir is every host's /usr/local/bin).
const sampleProgram = "/usr/local/bin/stado-sample-wj"

var sampleBuild struct {
	once sync.Once
	err  error
}

// installSample builds tests/fixtures/sample and installs it into the bed's
// bin dir atomically, once per process.
func installSample(t testing.TB, bed *testbed.Bed) {
	t.Helper()
	sampleBuild.once.Do(func() {
		tmp := filepath.Join(bed.BinDir(), ".stado-sample-wj.tmp")
		cmd := exec.Command("go", "build", "-buildvcs=false", "-o", tmp, "./fixtures/sample")
		if out, err := cmd.CombinedOutput(); err != nil {
			sampleBuild.err = fmt.Errorf("build the sample service: %v\n%s", err, out)
			return
		}
		sampleBuild.err = os.Rename(tmp, filepath.Join(bed.BinDir(), filepath.Base(sampleProgram)))
	})
	if sampleBuild.err != nil {
		t.Fatal(sampleBuild.err)
	}
	// every host has its own /usr/local/bin: place it in each (again, for
	// hosts booted since)
	bed.InstallShared(t, filepath.Join(bed.BinDir(), filepath.Base(sampleProgram)))
}

// writeBed is one write journey's view of the shared testbed: its own store
// and the stado binary every host runs.
type writeBed struct {
	bed   *testbed.Bed
	bin   string
	store string // file store directory
	home  string // HOME of the workstation commands
	// keeper lets the commands use a connection keeper (see runWith).
	keeper bool
}

func newWriteBed(t testing.TB, n int) *writeBed {
	t.Helper()
	bed := testbed.Shared(t, n)
	bin := testbed.BuildStado(t)
	bed.InstallStado(t, bin)
	installSample(t, bed)
	return &writeBed{bed: bed, bin: bin, store: bed.NewStore(t), home: t.TempDir()}
}

// declared is one service declared on every host in hosts.
type declared struct {
	name, unit string
	port       int      // the sample listens on the host's address at this port
	args       []string // instead of the sample's --addr, when set
	program    string
}

// push writes a registry naming hosts as targets with their ssh address,
// each declaring the services given.
func (w *writeBed) push(t testing.TB, hosts []testbed.Host, svcs ...declared) {
	t.Helper()
	doc := &registry.Document{Version: 1}
	for _, h := range hosts {
		tg := registry.Target{Name: h.Name, OS: registry.OSLinux, SSH: registry.SSH{Address: h.Addr, User: "root"}}
		for _, s := range svcs {
			d := registry.Service{Name: s.name, Unit: s.unit, Program: s.program, Args: s.args}
			if d.Program == "" {
				d.Program = sampleProgram
				d.Args = []string{"--addr", fmt.Sprintf("%s:%d", h.Addr, s.port)}
			}
			tg.Services = append(tg.Services, d)
		}
		doc.Targets = append(doc.Targets, tg)
	}
	st := w.openStore(t)
	defer st.Close()
	_, meta, err := registry.Load(context.Background(), st)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	if _, err := registry.Push(context.Background(), st, doc, meta.Revision, "journey fixture"); err != nil {
		t.Fatal(err)
	}
}

func (w *writeBed) openStore(t testing.TB) store.Store {
	t.Helper()
	st, err := store.OpenFileStore(w.store)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func (w *writeBed) load(t testing.TB) (*registry.Document, store.Meta) {
	t.Helper()
	st := w.openStore(t)
	defer st.Close()
	d, m, err := registry.Load(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	return d, m
}

// run is one stado command from the workstation: the bed's known_hosts and
// key, no ssh_config, no agent. It returns the exit code, stdout, stderr.
func (w *writeBed) run(t testing.TB, args ...string) (int, string, string) {
	t.Helper()
	return w.runWith(t, []string{"--known-hosts", w.bed.KnownHosts(), "--identity", w.bed.KeyPath()}, args...)
}

func (w *writeBed) runWith(t testing.TB, ssh []string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	full := append(append(append([]string{}, args...), "--store", "file://"+w.store, "--ssh-config", os.DevNull), ssh...)
	cmd := exec.CommandContext(ctx, w.bin, full...)
	// Cold, as each journey was written: a keeper's kept connection would
	// outlive the sshd stops and key changes journeys make on shared hosts.
	// TestKeptConnectionsCarryWarmCallsInOneSessionPerHost runs the keeper.
	cmd.Env = []string{"HOME=" + w.home, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "STADO_WRITER=journey"}
	if !w.keeper {
		cmd.Env = append(cmd.Env, "STADO_NO_KEEPER=1")
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("stado %v: %v", args, err)
	}
	return code, out.String(), errb.String()
}

// hostResult is the per-host shape of the fan-out commands' --json.
type hostResult struct {
	Host    string         `json:"host"`
	OK      bool           `json:"ok"`
	Install string         `json:"install"`
	Run     string         `json:"run"`
	Verdict *units.Verdict `json:"verdict"`
	Error   *struct {
		Host, Stage, Code, Message string
	} `json:"error"`
}

func fanOutResults(t testing.TB, out string) map[string]hostResult {
	t.Helper()
	var doc struct {
		Kind    string       `json:"kind"`
		Results []hostResult `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("not one JSON document: %v\n%s", err, out)
	}
	m := map[string]hostResult{}
	for _, r := range doc.Results {
		m[r.Host] = r
	}
	return m
}

func errorDoc(t testing.TB, stderr string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(stderr), &m); err != nil {
		t.Fatalf("stderr is not one JSON error: %v\n%s", err, stderr)
	}
	return m
}

// mainPID reads a unit's MainPID straight from the host's systemd.
func mainPID(t testing.TB, bed *testbed.Bed, h testbed.Host, unit string) int {
	t.Helper()
	out, _, err := bed.Exec(context.Background(), h, "systemctl", "show", "--property=MainPID", "--value", unit)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(out))
	return pid
}

// removeUnit stops and deletes a unit on h, for cleanup.
func removeUnit(bed *testbed.Bed, h testbed.Host, unit string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bed.Exec(ctx, h, "systemctl", "disable", "--now", unit)
	bed.Exec(ctx, h, "rm", "-f", "/etc/systemd/system/"+unit)
	bed.Exec(ctx, h, "systemctl", "daemon-reload")
	bed.Exec(ctx, h, "systemctl", "reset-failed", unit)
}

func cleanupUnits(t testing.TB, bed *testbed.Bed, hosts []testbed.Host, unitNames ...string) {
	t.Cleanup(func() {
		for _, h := range hosts {
			for _, u := range unitNames {
				removeUnit(bed, h, u)
			}
		}
	})
}

// answer asks the sample on addr what it is.
func answer(addr string) (string, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + "/")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestEnsureOnThreeHostsInstallsStartsAndRepeatsAsUnchanged(t *testing.T) {
	t.Parallel()
	w := newWriteBed(t, 3)
	hosts := w.bed.Hosts()[:3]
	const unit = "stado-wj-ensure.service"
	cleanupUnits(t, w.bed, hosts, unit)
	w.push(t, hosts, declared{name: "wj-ensure", unit: unit, port: 18091})

	code, out, errOut := w.run(t, "service", "ensure", "wj-ensure", "--all", "--json")
	if code != 0 {
		t.Fatalf("first ensure: exit %d\n%s\n%s", code, out, errOut)
	}
	first := fanOutResults(t, out)
	pids := map[string]int{}
	for _, h := range hosts {
		r := first[h.Name]
		if !r.OK || r.Install != "installed" || r.Run != "started" || r.Verdict == nil || r.Verdict.State != "active" || r.Verdict.PID == 0 {
			t.Errorf("%s: first ensure %+v", h.Name, r)
			continue
		}
		if got := mainPID(t, w.bed, h, unit); got != r.Verdict.PID {
			t.Errorf("%s: systemd says MainPID %d, ensure reported %d", h.Name, got, r.Verdict.PID)
		}
		pids[h.Name] = r.Verdict.PID
		if a, err := answer(fmt.Sprintf("%s:18091", h.Addr)); err != nil || !strings.HasPrefix(a, h.Name+" ") {
			t.Errorf("%s: the sample answers %q, %v", h.Name, a, err)
		}
	}

	code, out, errOut = w.run(t, "service", "ensure", "wj-ensure", "--all", "--json")
	if code != 0 {
		t.Fatalf("second ensure: exit %d\n%s\n%s", code, out, errOut)
	}
	second := fanOutResults(t, out)
	for _, h := range hosts {
		r := second[h.Name]
		if !r.OK || r.Install != "unchanged" || r.Run != "none" {
			t.Errorf("%s: second ensure %+v, want unchanged and no run", h.Name, r)
		}
		if got := mainPID(t, w.bed, h, unit); got != pids[h.Name] {
			t.Errorf("%s: MainPID %d after the second ensure, was %d: something restarted", h.Name, got, pids[h.Name])
		}
	}

	// a dry run reads the host and plans nothing for an unchanged, running unit
	h1 := hosts[0]
	code, out, errOut = w.run(t, "service", "ensure", "wj-ensure", "--host", h1.Name, "--dry-run")
	if code != 0 || !strings.Contains(out, h1.Name+": would unit-install "+unit) || !strings.Contains(out, "(unchanged)") {
		t.Errorf("ensure --dry-run: exit %d\n%s\n%s", code, out, errOut)
	}
	// the service's own output comes back over the channel
	code, out, errOut = w.run(t, "service", "logs", "wj-ensure", "--host", h1.Name, "--lines", "20")
	if code != 0 || !strings.Contains(out, "listening on "+h1.Addr+":18091") {
		t.Errorf("service logs: exit %d\n%s\n%s", code, out, errOut)
	}
	// an exact unit name with no declaration is not a managed service
	code, _, errOut = w.run(t, "service", "logs", "ssh.service", "--host", h1.Name, "--json")
	if code != 3 || !strings.Contains(errorDoc(t, errOut)["message"].(string), "not a registry-managed service on "+h1.Name) {
		t.Errorf("service logs of an undeclared unit: exit %d: %s", code, errOut)
	}

	// a unit file deleted by hand is restored from program and args
	h2 := hosts[1]
	removeUnit(w.bed, h2, unit)
	if _, err := w.bed.ReadFile(h2, "/etc/systemd/system/"+unit); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the unit file is still there after deleting it: %v", err)
	}
	code, out, errOut = w.run(t, "service", "ensure", "wj-ensure", "--host", h2.Name, "--json")
	if code != 0 {
		t.Fatalf("ensure after deletion: exit %d\n%s\n%s", code, out, errOut)
	}
	if r := fanOutResults(t, out)[h2.Name]; r.Install != "installed" || r.Verdict == nil || r.Verdict.State != "active" {
		t.Errorf("ensure after deletion: %+v", r)
	}
	d, _ := w.load(t)
	tg, _ := d.Target(h2.Name)
	s, _ := tg.Service("wj-ensure")
	want, err := units.Render(*s, registry.OSLinux, "/root")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := w.bed.ReadFile(h2, "/etc/systemd/system/"+unit); err != nil || !bytes.Equal(got, want) {
		t.Errorf("restored unit file differs from the rendering (%v):\n%s", err, got)
	}
}

func TestAdoptRecordsAHandInstalledUnitAndRefusesTwoExecStartLines(t *testing.T) {
	t.Parallel()
	w := newWriteBed(t, 3)
	h := w.bed.Host(1)
	const hand, two = "stado-wj-hand.service", "stado-wj-two.service"
	cleanupUnits(t, w.bed, []testbed.Host{h}, hand, two)
	w.push(t, []testbed.Host{h})
	handUnit := fmt.Sprintf("[Unit]\nDescription=installed by hand\n\n[Service]\nExecStart=%s --addr %s:18092\nRestart=always\n\n[Install]\nWantedBy=multi-user.target\n", sampleProgram, h.Addr)
	twoUnit := "[Unit]\nDescription=two commands\n\n[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/true\nExecStart=/bin/echo second\n"
	ctx := journeyCtx(t)
	for unit, body := range map[string]string{hand: handUnit, two: twoUnit} {
		if err := w.bed.WriteFile(h, "/etc/systemd/system/"+unit, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := w.bed.Exec(ctx, h, "systemctl", "daemon-reload"); err != nil {
		t.Fatal(err)
	}
	for _, unit := range []string{hand, two} {
		if _, _, err := w.bed.Exec(ctx, h, "systemctl", "start", unit); err != nil {
			t.Fatal(err)
		}
	}

	code, out, errOut := w.run(t, "service", "adopt", hand, "--host", h.Name, "--reason", "take over the hand-made unit", "--json")
	if code != 0 {
		t.Fatalf("adopt: exit %d\n%s\n%s", code, out, errOut)
	}
	var res struct {
		Complete bool             `json:"complete"`
		Service  registry.Service `json:"service"`
		Revision int64            `json:"registry_revision"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	wantArgs := []string{"--addr", h.Addr + ":18092"}
	if !res.Complete || res.Service.Program != sampleProgram || strings.Join(res.Service.Args, " ") != strings.Join(wantArgs, " ") {
		t.Errorf("adopt result %+v, want a complete declaration of %s %v", res, sampleProgram, wantArgs)
	}
	d, meta := w.load(t)
	tg, _ := d.Target(h.Name)
	if s, ok := tg.Service(hand); !ok || s.Program != sampleProgram || s.Incomplete() {
		t.Errorf("registry after adopt: %+v", tg.Services)
	}
	if meta.Revision != res.Revision || meta.Reason != "take over the hand-made unit" {
		t.Errorf("registry revision %d (reason %q), adopt reported %d", meta.Revision, meta.Reason, res.Revision)
	}
	// the adopted declaration ensures as unchanged-or-updated, never refused
	if code, out, errOut = w.run(t, "service", "ensure", "stado-wj-hand", "--host", h.Name, "--json"); code != 0 {
		t.Errorf("ensure of the adopted unit: exit %d\n%s\n%s", code, out, errOut)
	}
	// adopting it again is refused
	if code, _, errOut = w.run(t, "service", "adopt", hand, "--host", h.Name, "--json"); code != 3 || errorDoc(t, errOut)["code"] != "already_declared" {
		t.Errorf("second adopt: exit %d: %s", code, errOut)
	}

	code, out, errOut = w.run(t, "service", "adopt", two, "--host", h.Name, "--json")
	if code != 0 {
		t.Fatalf("adopt of two ExecStart lines: exit %d\n%s\n%s", code, out, errOut)
	}
	var inc struct {
		Complete bool   `json:"complete"`
		Reason   string `json:"incomplete_reason"`
	}
	if err := json.Unmarshal([]byte(out), &inc); err != nil {
		t.Fatal(err)
	}
	if inc.Complete || inc.Reason == "" {
		t.Errorf("adopt of %s: %s, want an incomplete declaration with its reason", two, out)
	}
	d, _ = w.load(t)
	tg, _ = d.Target(h.Name)
	if s, ok := tg.Service(two); !ok || !s.Incomplete() || s.UnitPath != "/etc/systemd/system/"+two || s.IncompleteReason == "" {
		t.Errorf("registry after adopting %s: %+v", two, s)
	}
	code, _, errOut = w.run(t, "service", "ensure", "stado-wj-two", "--host", h.Name, "--json")
	if code != 3 || errorDoc(t, errOut)["code"] != "declaration_incomplete" {
		t.Errorf("ensure of the incomplete declaration: exit %d: %s", code, errOut)
	}
}

func TestRetireLeavesNeitherUnitNorDeclaration(t *testing.T) {
	t.Parallel()
	w := newWriteBed(t, 3)
	h := w.bed.Host(3)
	const unit = "stado-wj-retire.service"
	cleanupUnits(t, w.bed, []testbed.Host{h}, unit)
	w.push(t, []testbed.Host{h}, declared{name: "wj-retire", unit: unit, port: 18094})
	if code, out, errOut := w.run(t, "service", "ensure", "wj-retire", "--host", h.Name); code != 0 {
		t.Fatalf("ensure: exit %d\n%s\n%s", code, out, errOut)
	}
	// a dry run changes nothing
	_, beforeMeta := w.load(t)
	if code, out, errOut := w.run(t, "service", "retire", "wj-retire", "--host", h.Name, "--dry-run"); code != 0 || !strings.Contains(out, "would unit-remove") {
		t.Fatalf("retire --dry-run: exit %d\n%s\n%s", code, out, errOut)
	}
	if mainPID(t, w.bed, h, unit) == 0 {
		t.Error("retire --dry-run stopped the unit")
	}
	if _, m := w.load(t); m.Revision != beforeMeta.Revision {
		t.Errorf("retire --dry-run wrote registry revision %d", m.Revision)
	}

	code, out, errOut := w.run(t, "service", "retire", "wj-retire", "--host", h.Name, "--reason", "no longer needed", "--json")
	if code != 0 {
		t.Fatalf("retire: exit %d\n%s\n%s", code, out, errOut)
	}
	if _, err := w.bed.ReadFile(h, "/etc/systemd/system/"+unit); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the unit file is still on %s: %v", h.Name, err)
	}
	load, _, _ := w.bed.Exec(journeyCtx(t), h, "systemctl", "show", "--property=LoadState", "--value", unit)
	if s := strings.TrimSpace(load); s != "not-found" {
		t.Errorf("systemd still holds %s after retire: LoadState=%s", unit, s)
	}
	d, meta := w.load(t)
	if tg, _ := d.Target(h.Name); len(tg.Services) != 0 {
		t.Errorf("declarations after retire: %+v", tg.Services)
	}
	if meta.Reason != "no longer needed" {
		t.Errorf("retire revision reason %q", meta.Reason)
	}
	code, _, errOut = w.run(t, "service", "remove", "wj-retire", "--host", h.Name, "--json")
	if code != 3 || errorDoc(t, errOut)["code"] != "not_found" {
		t.Errorf("remove after retire: exit %d, want 3 not_found: %s", code, errOut)
	}
}

// restrictedKey makes a second key, restricted on h to the forced command,
// and returns its private key file. The bed's own key keeps its shell, so
// other journeys are not affected; cleanup restores authorized_keys.
func restrictedKey(t *testing.T, bed *testbed.Bed, h testbed.Host) string {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "restricted journey key")
	if err != nil {
		t.Fatal(err)
	}
	keyPath := filepath.Join(t.TempDir(), "id_restricted")
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	const ak = "/root/.ssh/authorized_keys"
	orig, err := bed.ReadFile(h, ak)
	if err != nil {
		t.Fatal(err)
	}
	line := `command="/usr/local/bin/stado host channel",restrict ` + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPub))) + " journey-restricted\n"
	if err := bed.WriteFile(h, ak, append(append([]byte{}, orig...), line...), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := bed.WriteFile(h, ak, orig, 0o600); err != nil {
			t.Errorf("restore %s on %s: %v", ak, h.Name, err)
		}
	})
	return keyPath
}

func TestForcedCommandRunsOnlyTheGrammar(t *testing.T) {
	t.Parallel()
	w := newWriteBed(t, 3)
	h := w.bed.Host(2)
	key := restrictedKey(t, w.bed, h)
	const marker = "/tmp/stado-wj-marker"
	ctx := journeyCtx(t)
	w.bed.Exec(ctx, h, "rm", "-f", marker)
	sshRaw := func(command string) (int, string) {
		args := []string{"-F", os.DevNull, "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-i", key,
			"-o", "UserKnownHostsFile=" + w.bed.KnownHosts(), "-o", "StrictHostKeyChecking=yes", "-o", "GlobalKnownHostsFile=/dev/null",
			"root@" + h.Addr}
		if command != "" {
			args = append(args, "--", command)
		}
		cmd := exec.CommandContext(ctx, "ssh", args...)
		cmd.Stdin = strings.NewReader("")
		out, err := cmd.Output()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode(), string(out)
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	for _, tc := range []struct {
		name, command, code string
	}{
		{"id", "id", "unknown_verb"},                                                                          // a command that is no verb
		{"shell", "sh -c 'touch " + marker + "'", "unknown_verb"},                                             // a shell
		{"semicolon", "version; touch " + marker, "forbidden_character"},                                      // a second command after ;
		{"substitution", "unit-show system $(touch " + marker + ").service", "forbidden_character"},           // $(...)
		{"backquote", "unit-show system `touch " + marker + "`.service", "forbidden_character"},               // `...`
		{"traversal", "unit-remove system x.service /etc/systemd/system/../../.." + marker, "path_traversal"}, // ../
		{"bad unit", "unit-restart system 'x;touch " + marker + ".service'", "invalid_unit"},                  // outside the unit grammar
		{"login", "", "empty_command"},                                                                        // no command: no shell either
	} {
		code, out := sshRaw(tc.command)
		if code != 3 {
			t.Errorf("%s: exit %d, want 3: %s", tc.name, code, out)
			continue
		}
		var doc struct{ Kind, Code string }
		if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Kind != "stado.channel.refusal" || doc.Code != tc.code {
			t.Errorf("%s: printed %q, want a refusal %s", tc.name, out, tc.code)
		}
	}
	if _, err := w.bed.ReadFile(h, marker); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused command ran: %s exists (%v)", marker, err)
	}
	// what the grammar allows runs, through the forced command
	if code, out := sshRaw("version"); code != 0 || !strings.Contains(out, `"kind":"stado.channel.result"`) {
		t.Errorf("version through the forced command: exit %d: %s", code, out)
	}
	// and stado's own client works with the restricted key
	w.push(t, []testbed.Host{h})
	code, out, errOut := w.runWith(t, []string{"--known-hosts", w.bed.KnownHosts(), "--identity", key}, "service", "unit", "show", "ssh.service", "--host", h.Name, "--json")
	if code != 0 || !strings.Contains(out, `"state": "active"`) {
		t.Errorf("unit show with the restricted key: exit %d\n%s\n%s", code, out, errOut)
	}
}

// hostKeys returns the known_hosts lines of the bed recorded for h, as
// "type base64" pairs.
func hostKeys(t *testing.T, bed *testbed.Bed, h testbed.Host) [][2]string {
	t.Helper()
	data, err := os.ReadFile(bed.KnownHosts())
	if err != nil {
		t.Fatal(err)
	}
	var out [][2]string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == h.Name+","+h.Addr {
			out = append(out, [2]string{f[1], f[2]})
		}
	}
	if len(out) == 0 {
		t.Fatalf("no key of %s in %s", h.Name, bed.KnownHosts())
	}
	return out
}

func TestHostKeysUnknownAreRefusedWithTheFingerprintAndChangedAlways(t *testing.T) {
	t.Parallel()
	w := newWriteBed(t, 3)
	h1, h2 := w.bed.Host(1), w.bed.Host(2)
	w.push(t, []testbed.Host{h1})
	dir := t.TempDir()

	var fingerprints []string
	for _, k := range hostKeys(t, w.bed, h1) {
		pk, _, _, _, err := ssh.ParseAuthorizedKey([]byte(k[0] + " " + k[1]))
		if err != nil {
			t.Fatal(err)
		}
		fingerprints = append(fingerprints, ssh.FingerprintSHA256(pk))
	}
	empty := filepath.Join(dir, "empty_known_hosts")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := w.runWith(t, []string{"--known-hosts", empty, "--identity", w.bed.KeyPath()}, "service", "unit", "show", "ssh.service", "--host", h1.Name, "--json")
	if code != 3 {
		t.Fatalf("unknown host key: exit %d\n%s\n%s", code, out, errOut)
	}
	e := errorDoc(t, errOut)
	msg, _ := e["message"].(string)
	named := false
	for _, fp := range fingerprints {
		named = named || strings.Contains(msg, fp)
	}
	if e["code"] != "host_key_unknown" || !named || !strings.Contains(msg, h1.Name) {
		t.Errorf("unknown host key refusal %v, want host_key_unknown naming %s and one of %v", e, h1.Name, fingerprints)
	}
	if !strings.Contains(out, `"stage": "host_key"`) {
		t.Errorf("the result document does not name the host_key stage: %s", out)
	}
	if b, _ := os.ReadFile(empty); len(b) != 0 {
		t.Errorf("a refused key was recorded: %s", b)
	}

	// host1's name and address with host2's keys: a changed key
	var lines []string
	for _, k := range hostKeys(t, w.bed, h2) {
		lines = append(lines, h1.Name+","+h1.Addr+" "+k[0]+" "+k[1])
	}
	changed := filepath.Join(dir, "changed_known_hosts")
	if err := os.WriteFile(changed, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = w.runWith(t, []string{"--known-hosts", changed, "--identity", w.bed.KeyPath(), "--accept-new-host-key"}, "service", "unit", "show", "ssh.service", "--host", h1.Name, "--json")
	if code != 3 || errorDoc(t, errOut)["code"] != "host_key_mismatch" {
		t.Errorf("changed host key with --accept-new-host-key: exit %d: %s", code, errOut)
	}
	if b, _ := os.ReadFile(changed); string(b) != strings.Join(lines, "\n")+"\n" {
		t.Errorf("known_hosts changed after a refused key:\n%s", b)
	}
}

// Not parallel: stopping a host's sshd would fail every journey that uses
// that host meanwhile. Sequential tests run before the parallel ones start.
func TestRestartWithOneHostUnreachableCompletesTheOthers(t *testing.T) {
	w := newWriteBed(t, 3)
	hosts := w.bed.Hosts()[:3]
	const unit = "stado-wj-restart.service"
	cleanupUnits(t, w.bed, hosts, unit)
	w.push(t, hosts, declared{name: "wj-restart", unit: unit, port: 18093})
	if code, out, errOut := w.run(t, "service", "ensure", "wj-restart", "--all"); code != 0 {
		t.Fatalf("ensure: exit %d\n%s\n%s", code, out, errOut)
	}
	before := map[string]int{}
	for _, h := range hosts {
		before[h.Name] = mainPID(t, w.bed, h, unit)
	}
	docBefore, metaBefore := w.load(t)
	down := hosts[1]
	ctx := journeyCtx(t)
	if err := w.bed.StopSSHD(ctx, down); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := w.bed.StartSSHD(ctx, down); err != nil {
			t.Errorf("start sshd on %s again: %v", down.Name, err)
		}
	})
	code, out, errOut := w.run(t, "service", "restart", "wj-restart", "--json")
	if code != 1 {
		t.Fatalf("restart with %s unreachable: exit %d, want 1\n%s\n%s", down.Name, code, out, errOut)
	}
	res := fanOutResults(t, out)
	for _, h := range hosts {
		r := res[h.Name]
		if h == down {
			if r.OK || r.Error == nil || r.Error.Stage != "connect" || r.Error.Host != h.Name {
				t.Errorf("%s: %+v, want a connect failure naming it", h.Name, r)
			}
			if got := mainPID(t, w.bed, h, unit); got != before[h.Name] {
				t.Errorf("%s: unreachable, yet its MainPID changed %d → %d", h.Name, before[h.Name], got)
			}
			continue
		}
		if !r.OK || r.Verdict == nil || r.Verdict.State != "active" {
			t.Errorf("%s: %+v, want restarted and active", h.Name, r)
		}
		if got := mainPID(t, w.bed, h, unit); got == before[h.Name] || got == 0 {
			t.Errorf("%s: MainPID %d after restart, was %d", h.Name, got, before[h.Name])
		}
	}
	if !strings.Contains(errOut, down.Name+": connect") {
		t.Errorf("stderr does not name the host and stage: %s", errOut)
	}
	docAfter, metaAfter := w.load(t)
	if metaAfter.Revision != metaBefore.Revision {
		t.Errorf("registry revision %d → %d after a restart", metaBefore.Revision, metaAfter.Revision)
	}
	a, _ := json.Marshal(docBefore)
	b, _ := json.Marshal(docAfter)
	if !bytes.Equal(a, b) {
		t.Errorf("declarations changed by a restart")
	}
}

// BenchmarkWriteRestart restarts one sample service through stado on 1 and
// on 10 testbed hosts (one stado process per iteration, one reused
// connection per host, fan-out 16), against the same restart as a plain
// loop of `ssh hostK systemctl restart UNIT`, sequential and parallel.
// `go test ./tests/ -run '^$' -bench WriteRestart -benchtime 5x`.
func BenchmarkWriteRestart(b *testing.B) {
	w := newWriteBed(b, 10)
	hosts := w.bed.Hosts()[:10]
	const unit = "stado-wj-bench.service"
	cleanupUnits(b, w.bed, hosts, unit)
	w.push(b, hosts, declared{name: "wj-bench", unit: unit, port: 18095})
	if code, out, errOut := w.run(b, "service", "ensure", "wj-bench", "--all"); code != 0 {
		b.Fatalf("ensure: exit %d\n%s\n%s", code, out, errOut)
	}
	restart := func(b *testing.B, n int) {
		args := []string{"service", "restart", "wj-bench"}
		for _, h := range hosts[:n] {
			args = append(args, "--host", h.Name)
		}
		for i := 0; i < b.N; i++ {
			if code, out, errOut := w.run(b, args...); code != 0 {
				b.Fatalf("restart: exit %d\n%s\n%s", code, out, errOut)
			}
		}
	}
	sshRestart := func(h testbed.Host) error {
		_, _, err := w.bed.SSH(context.Background(), h, "systemctl", "restart", unit)
		return err
	}
	b.Run("stado/hosts=1", func(b *testing.B) { restart(b, 1) })
	b.Run("stado/hosts=10", func(b *testing.B) { restart(b, 10) })
	b.Run("ssh-loop/hosts=1", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := sshRestart(hosts[0]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ssh-loop/hosts=10", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			for _, h := range hosts {
				if err := sshRestart(h); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("ssh-parallel/hosts=10", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			var wg sync.WaitGroup
			errs := make([]error, len(hosts))
			for k, h := range hosts {
				wg.Add(1)
				go func() { defer wg.Done(); errs[k] = sshRestart(h) }()
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkWriteEnsureCold ensures the sample on 10 hosts that have no unit
// file (write the unit, reload, start, confirm it runs for --settle).
func BenchmarkWriteEnsureCold(b *testing.B) {
	w := newWriteBed(b, 10)
	hosts := w.bed.Hosts()[:10]
	const unit = "stado-wj-cold.service"
	cleanupUnits(b, w.bed, hosts, unit)
	w.push(b, hosts, declared{name: "wj-cold", unit: unit, port: 18096})
	for _, settle := range []string{"0s", "1s"} {
		b.Run("hosts=10/settle="+settle, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				var wg sync.WaitGroup
				for _, h := range hosts {
					wg.Add(1)
					go func() { defer wg.Done(); removeUnit(w.bed, h, unit) }()
				}
				wg.Wait()
				b.StartTimer()
				if code, out, errOut := w.run(b, "service", "ensure", "wj-cold", "--all", "--settle", settle); code != 0 {
					b.Fatalf("ensure: exit %d\n%s\n%s", code, out, errOut)
				}
			}
		})
	}
}

func TestEnsureOfAProgramThatExitsReportsItFailingWithItsEvidence(t *testing.T) {
	t.Parallel()
	w := newWriteBed(t, 3)
	h := w.bed.Host(3)
	const unit = "stado-wj-failing.service"
	cleanupUnits(t, w.bed, []testbed.Host{h}, unit)
	// the sample refuses an unknown flag and exits 2; its supervisor keeps
	// starting it
	w.push(t, []testbed.Host{h}, declared{name: "wj-failing", unit: unit, program: sampleProgram, args: []string{"--no-such-flag"}})
	code, out, errOut := w.run(t, "service", "ensure", "wj-failing", "--host", h.Name, "--json", "--wait", "20s")
	if code != 1 {
		t.Fatalf("ensure of a failing program: exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	var doc struct {
		Results []struct {
			OK      bool           `json:"ok"`
			Verdict *units.Verdict `json:"verdict"`
			Logs    []string       `json:"logs"`
			Error   struct{ Host, Stage, Code string }
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Results) != 1 {
		t.Fatalf("ensure document %s (%v)", out, err)
	}
	r := doc.Results[0]
	if r.OK || r.Error.Code != "failing" || r.Error.Stage != "confirm" || r.Error.Host != h.Name {
		t.Errorf("result %+v, want a failing confirm naming %s", r, h.Name)
	}
	if r.Verdict == nil || (r.Verdict.State != "failing" && r.Verdict.State != "failed") || r.Verdict.LastExit != 2 {
		t.Errorf("verdict %+v, want failing with last exit 2", r.Verdict)
	}
	if !strings.Contains(strings.Join(r.Logs, "\n"), "no-such-flag") {
		t.Errorf("the evidence lacks the program's own complaint: %q", r.Logs)
	}
}

// Not parallel: it counts the channel processes on its hosts. The keeper is
// the test's own (started and ended by pid); the commands find it at
// $HOME/.stado/run/keeper.sock.
func TestKeptConnectionsCarryWarmCallsInOneSessionPerHost(t *testing.T) {
	w := newWriteBed(t, 3)
	w.keeper = true
	hosts := w.bed.Hosts()[:3]
	const unit = "stado-wj-kept.service"
	cleanupUnits(t, w.bed, hosts, unit)
	w.push(t, hosts, declared{name: "wj-kept", unit: unit, port: 18096})

	sock := filepath.Join(w.home, ".stado", "run", "keeper.sock")
	keeper := exec.Command(w.bin, "host", "keeper", "--idle", "2m", "--socket", sock)
	keeper.Env = []string{"HOME=" + w.home, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	if err := keeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = keeper.Process.Kill(); _ = keeper.Wait() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the keeper did not open its socket")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A known_hosts of the test's own, so a changed key touches no other test.
	kh := filepath.Join(t.TempDir(), "known_hosts")
	khBytes, err := os.ReadFile(w.bed.KnownHosts())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kh, khBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	sshFlags := []string{"--known-hosts", kh, "--identity", w.bed.KeyPath()}
	for i, want := range []string{"installed", "unchanged", "unchanged"} {
		code, out, errOut := w.runWith(t, sshFlags, "service", "ensure", "wj-kept", "--all", "--json")
		if code != 0 {
			t.Fatalf("ensure %d through the keeper: exit %d\n%s\n%s", i+1, code, out, errOut)
		}
		for _, h := range hosts {
			if r := fanOutResults(t, out)[h.Name]; !r.OK || r.Install != want || r.Verdict == nil || r.Verdict.State != "active" {
				t.Errorf("ensure %d on %s: %+v, want %s and active", i+1, h.Name, r, want)
			}
		}
	}
	// One session per host served every call: no stado was started per call.
	for _, h := range hosts {
		out, _, err := w.bed.Exec(journeyCtx(t), h, "pgrep", "-c", "-f", "host channel session")
		if err != nil || strings.TrimSpace(out) != "1" {
			t.Errorf("%s: %q channel sessions (%v), want 1", h.Name, strings.TrimSpace(out), err)
		}
	}
	// Each session kept its init-system connection from one call to the
	// next: it holds bus names between calls, and one more ensure leaves
	// them as they were (no connection dialed and announced per call).
	sessionBusNames := func(h testbed.Host) []string {
		t.Helper()
		pid, _, err := w.bed.Exec(journeyCtx(t), h, "pgrep", "-f", "host channel session")
		if err != nil {
			t.Fatalf("%s: no channel session: %v", h.Name, err)
		}
		out, _, err := w.bed.Exec(journeyCtx(t), h, "busctl", "--system", "list", "--unique", "--no-legend", "--no-pager")
		if err != nil {
			t.Fatalf("%s: busctl list: %v", h.Name, err)
		}
		var names []string
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[1] == strings.TrimSpace(pid) {
				names = append(names, f[0])
			}
		}
		return names
	}
	held := map[string][]string{}
	for _, h := range hosts {
		if held[h.Name] = sessionBusNames(h); len(held[h.Name]) == 0 {
			t.Errorf("%s: the channel session holds no bus connection between calls", h.Name)
		}
	}
	if code, out, errOut := w.runWith(t, sshFlags, "service", "ensure", "wj-kept", "--all", "--json"); code != 0 {
		t.Fatalf("ensure 4 through the keeper: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, h := range hosts {
		if now := sessionBusNames(h); !slices.Equal(now, held[h.Name]) {
			t.Errorf("%s: the session's bus names were %v before a call and %v after it; want the same connections kept", h.Name, held[h.Name], now)
		}
	}

	// A host key that no longer matches is refused on the kept connection,
	// as on a new one.
	h1 := hosts[0]
	otherPub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	other, err := ssh.NewPublicKey(otherPub)
	if err != nil {
		t.Fatal(err)
	}
	otherKey := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(other)))
	var lines []string
	for _, l := range strings.Split(string(khBytes), "\n") {
		if strings.Contains(l, h1.Addr+" ") || strings.HasPrefix(l, h1.Addr+" ") || strings.HasPrefix(l, "["+h1.Addr+"]") {
			f := strings.Fields(l)
			if len(f) >= 3 {
				l = f[0] + " " + otherKey
			}
		}
		lines = append(lines, l)
	}
	if err := os.WriteFile(kh, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := w.runWith(t, sshFlags, "service", "ensure", "wj-kept", "--host", h1.Name, "--json")
	r := fanOutResults(t, out)[h1.Name]
	if code != 3 || r.OK || r.Error == nil || r.Error.Stage != "host_key" || r.Error.Code != "host_key_mismatch" {
		t.Errorf("ensure with a changed key through the keeper: exit %d %+v\n%s", code, r.Error, errOut)
	}
}
