package fleet_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/channel/channeltest"
	"github.com/wisent/stado/channel/local"
	"github.com/wisent/stado/channel/sshclient"
	"github.com/wisent/stado/fleet"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
	"github.com/wisent/stado/units"
	"github.com/wisent/stado/units/unitstest"
)

// The fixture fleet: host1 is an in-process local.Host over an in-memory
// manager (user scope, so every file lands in the test's own home); down
// is a real SSH target on a closed loopback port.
const fleetDoc = `version: 1
targets:
  - name: host1
    os: linux
    ssh: {address: 127.0.0.1, port: 1}
    services:
      - name: api
        unit: api.service
        scope: user
        program: /usr/local/bin/api
        args: [--listen, "127.0.0.1:8080"]
      - name: legacy
        unit: legacy.service
        unit_path: /etc/systemd/system/legacy.service
        incomplete_reason: legacy.service has 2 ExecStart= lines
  - name: down
    os: linux
    ssh: {address: 127.0.0.1, port: 1}
    services:
      - name: api
        unit: api.service
        scope: user
        program: /usr/local/bin/api
`

// fakeClock advances only when the code under test waits.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	ch := make(chan time.Time, 1)
	ch <- c.now
	return ch
}

type bed struct {
	fleet *fleet.Fleet
	host  *local.Host // host1
	mem   *unitstest.Memory
	home  string
	store store.Store
}

func newBed(t *testing.T) *bed {
	t.Helper()
	dir := t.TempDir()
	st, err := store.OpenFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	doc, err := registry.Parse([]byte(fleetDoc), "fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := registry.Push(context.Background(), st, doc, 0, "fixture"); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	mem := unitstest.NewMemory(home)
	clock := &fakeClock{now: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
	h := &local.Host{GOOS: "linux", Home: home, Now: clock.Now, After: clock.After,
		Manager: func(context.Context, string) (units.Manager, func(), error) { return mem, func() {}, nil }}
	pool := sshclient.NewPool(&sshclient.Dialer{KnownHostsPath: dir + "/known_hosts", IdentityFiles: []string{channeltest.WriteKey(t)}, SSHConfigPath: os.DevNull, NoAgent: true, ConnectTimeout: 2 * time.Second})
	t.Cleanup(func() { pool.Close() })
	connect := func(tg registry.Target) channel.Host {
		if tg.Name == "host1" {
			return h
		}
		return &sshclient.Client{Pool: pool, Target: tg}
	}
	f, err := fleet.Open(context.Background(), st, connect)
	if err != nil {
		t.Fatal(err)
	}
	return &bed{fleet: f, host: h, mem: mem, home: home, store: st}
}

func (b *bed) ensure(t *testing.T, o fleet.EnsureOptions) (fleet.EnsureOutcome, error) {
	t.Helper()
	if o.Name == "" {
		o.Name = "api"
	}
	if len(o.Hosts) == 0 && !o.All {
		o.Hosts = []string{"host1"}
	}
	o.Settle = time.Second
	list, err := b.fleet.Ensure(context.Background(), o, nil)
	if len(list) != 1 {
		t.Fatalf("%d outcomes, want 1 (err %v)", len(list), err)
	}
	return list[0], err
}

func TestEnsureOfAnAbsentUnitInstallsStartsAndConfirmsIt(t *testing.T) {
	b := newBed(t)
	r, err := b.ensure(t, fleet.EnsureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Install != units.ActionInstalled || r.Run != channel.RunStarted || r.Verdict.State != units.StateActive || r.Verdict.PID == 0 {
		t.Fatalf("outcome %+v", r)
	}
	data, err := os.ReadFile(r.Path)
	if err != nil || !strings.Contains(string(data), "ExecStart=/usr/local/bin/api --listen 127.0.0.1:8080") {
		t.Fatalf("unit file %q: %v", data, err)
	}
}

func TestEnsureOfAnUnchangedRunningUnitChangesNothingAndWritesNoRegistry(t *testing.T) {
	b := newBed(t)
	first, err := b.ensure(t, fleet.EnsureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, before, _ := registry.Load(context.Background(), b.store)
	calls := map[string]int{}
	for k, v := range b.mem.Calls {
		calls[k] = v
	}
	r, err := b.ensure(t, fleet.EnsureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Install != units.ActionUnchanged || r.Run != channel.RunNone || r.Verdict.PID != first.Verdict.PID {
		t.Fatalf("outcome %+v, first pid %d", r, first.Verdict.PID)
	}
	if b.mem.Calls["Start"] != calls["Start"] || b.mem.Calls["Restart"] != calls["Restart"] {
		t.Fatalf("a converged ensure started or restarted: %v then %v", calls, b.mem.Calls)
	}
	_, after, _ := registry.Load(context.Background(), b.store)
	if after.Revision != before.Revision {
		t.Fatalf("registry revision moved %d -> %d", before.Revision, after.Revision)
	}
}

func TestEnsureOfAChangedUnitRewritesAndRestartsIt(t *testing.T) {
	b := newBed(t)
	first, err := b.ensure(t, fleet.EnsureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(first.Path, []byte("[Service]\nExecStart=/bin/old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := b.ensure(t, fleet.EnsureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Install != units.ActionUpdated || r.Run != channel.RunRestarted || r.Verdict.PID == first.Verdict.PID {
		t.Fatalf("outcome %+v", r)
	}
}

func TestEnsureDryRunShowsTheDiffAndChangesNothing(t *testing.T) {
	b := newBed(t)
	r, err := b.ensure(t, fleet.EnsureOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Install != units.ActionInstalled || r.Run != channel.RunStarted || !strings.Contains(r.Diff, "+ExecStart=/usr/local/bin/api") {
		t.Fatalf("outcome %+v", r)
	}
	if _, err := os.Stat(r.Path); !errors.Is(err, os.ErrNotExist) || b.mem.Calls["Install"] != 0 {
		t.Fatalf("a dry run wrote %s (%v) or installed (%v)", r.Path, err, b.mem.Calls)
	}
}

func TestEnsureOfAProgramThatExitsAfterStartIsFailingWithItsLogs(t *testing.T) {
	b := newBed(t)
	b.mem.Load("api.service", "", unitstest.ExitsAfterStart)
	r, err := b.ensure(t, fleet.EnsureOptions{})
	var fe *fleet.FailingError
	if !errors.As(err, &fe) {
		t.Fatalf("err %v, want a FailingError", err)
	}
	if r.Verdict.State != units.StateFailing || r.Error.Stage != fleet.StageConfirm || r.Error.Code != string(refusal.Failing) || len(r.Logs) == 0 {
		t.Fatalf("outcome %+v error %+v", r, r.Error)
	}
}

func TestEnsureOfAnIncompleteDeclarationIsRefusedBeforeAnyHost(t *testing.T) {
	b := newBed(t)
	r, err := b.ensure(t, fleet.EnsureOptions{Name: "legacy"})
	if code, refused := fleet.Classify(err); !refused || code != string(refusal.DeclarationIncomplete) {
		t.Fatalf("err %v (%s), want declaration_incomplete", err, code)
	}
	if r.Error.Stage != fleet.StagePlan || b.mem.Calls["Install"] != 0 {
		t.Fatalf("outcome %+v calls %v", r.Error, b.mem.Calls)
	}
}

func TestEnsureOfAnUnreachableHostFailsAtConnectAndTheOthersCarryOn(t *testing.T) {
	b := newBed(t)
	list, err := b.fleet.Ensure(context.Background(), fleet.EnsureOptions{Name: "api", All: true, Settle: time.Second}, nil)
	if _, refused := fleet.Classify(err); err == nil || refused {
		t.Fatalf("err %v, want a failure", err)
	}
	if len(list) != 2 || !list[0].OK || list[1].OK || list[1].Error.Stage != string(channel.StageConnect) {
		t.Fatalf("outcomes %+v / %+v", list, list[1].Error)
	}
}

func TestEnsureOfAnUnknownTargetIsRefusedWithNoOutcome(t *testing.T) {
	b := newBed(t)
	list, err := b.fleet.Ensure(context.Background(), fleet.EnsureOptions{Name: "api", Hosts: []string{"nohost"}}, nil)
	if !refusal.Is(err, refusal.NotFound) || list != nil {
		t.Fatalf("err %v list %v", err, list)
	}
}

func TestEnsureOfACatalogProductRecordsItsDeclarationOnce(t *testing.T) {
	b := newBed(t)
	r, err := b.ensure(t, fleet.EnsureOptions{Name: "brama", AsLaunchAgent: true})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Recorded || r.Service == nil || r.Service.Product != "brama" {
		t.Fatalf("outcome %+v", r)
	}
	doc, _, _ := registry.Load(context.Background(), b.store)
	tg, _ := doc.Target("host1")
	if _, ok := tg.Service("brama"); !ok {
		t.Fatal("declaration not recorded")
	}
}
