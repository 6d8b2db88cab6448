package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/channel/sshclient"
	"github.com/wisent/stado/register"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/repair"
	"github.com/wisent/stado/store"
	"github.com/wisent/stado/tests/testbed"
)

// The user-scope journey: on one testbed host where logind runs and the
// login user stado-alice lingers (this journey only), a user-scope service
// is ensured over ssh as that user, into its systemd user manager. The
// host's stado process, a system service run by root, observes it in that
// user's manager, asks its question, and when the question stands repairs
// it and restarts it through the same user manager (a new MainPID). The
// write half's restart over the channel, and the Host a peer's recovery
// restarts through, reach it the same way (ssh as that user). Once the
// user stops lingering, the beacon says the manager is not running, never
// that the unit is missing.

const userScopeSite = `version: 1
products:
  - name: us-web
    units: {systemd: us-web.service}
    program: /usr/local/bin/us-answering-fixture
    answering: {method: GET, path: /work, repair: [us-unmark]}
steps:
  us-unmark:
    linux: {argv: [/bin/rm, -f, /var/tmp/us-web.marker], timeout_seconds: 5}
`

const userScopeFleet = `version: 1
service_resolver: {refresh_seconds: 2}
directory:
  - {service: us-web, host: %[1]s, port: 19531}
targets:
  - name: %[1]s
    ssh: {address: %[2]s, port: 22, user: %[3]s}
    os: linux
    services:
      - name: us-web
        unit: us-web.service
        scope: user
        program: /usr/local/bin/us-answering-fixture
        args: [--mode, hold, --marker, /var/tmp/us-web.marker, --listen, "%[2]s:19531"]
        product: us-web
`

// userScopeHostProcess is the host's stado process: a system unit root
// runs, installed by hand as an operator would (its target's ssh user is
// not root, so the write half cannot install system units there).
const userScopeHostProcess = `[Unit]
Description=stado host process of the user-scope journey

[Service]
ExecStart=/usr/local/bin/stado host run
Environment="STADO_STORE=%s" "STADO_INTERVAL=1s" "STADO_HOST=%s" "HOME=/var/tmp/us-home"
Restart=always
`

func TestUserScopeServiceIsObservedInItsUsersManagerAndRecoveredThroughIt(t *testing.T) {
	t.Parallel()
	bed := testbed.Shared(t, 1)
	bin := testbed.BuildStado(t)
	bed.InstallStado(t, bin)
	hosts := bed.Hosts()
	h := hosts[len(hosts)-1] // the last host: the one other journeys use least
	ctx := context.Background()

	fixture := filepath.Join(bed.BinDir(), "us-answering-fixture")
	if out, err := exec.Command("go", "build", "-o", fixture, "./fixtures/answering").CombinedOutput(); err != nil {
		t.Fatalf("build the fixture: %v\n%s", err, out)
	}
	bed.InstallBin(t, fixture)

	alice := bed.AddUser(t, "stado-alice")
	bed.EnableLinger(t, h, alice)

	storeDir := bed.NewStore(t)
	storeURL := "file://" + storeDir
	c := newCLI(t, bed, storeURL)
	site := filepath.Join(t.TempDir(), "site.yaml")
	fleet := filepath.Join(t.TempDir(), "fleet.yaml")
	os.WriteFile(site, []byte(userScopeSite), 0o644)
	os.WriteFile(fleet, []byte(fmt.Sprintf(userScopeFleet, h.Name, h.Addr, alice.Name)), 0o644)
	c.mustRun(t, "catalog", "push", site)
	c.mustRun(t, "registry", "push", fleet, "--reason", "user-scope journey")

	t.Cleanup(func() {
		bed.Exec(ctx, h, "systemctl", "disable", "--now", "us-stado.service")
		bed.Exec(ctx, h, "rm", "-f", "/etc/systemd/system/us-stado.service")
		bed.Exec(ctx, h, "systemctl", "daemon-reload")
		bed.Exec(ctx, h, "systemctl", "reset-failed", "us-*") // this journey's units only: a parallel journey's restart counts stay
		bed.Exec(ctx, h, "rm", "-rf", "/var/tmp/us-home", "/var/tmp/us-web.marker")
	})

	// ensure over ssh as stado-alice: her own manager installs and starts it
	out := c.mustRun(t, "service", "ensure", "us-web", "--host", h.Name, "--reason", "user-scope fixture")
	t.Logf("ensure: %s", strings.TrimSpace(out))
	unitFile := filepath.Join(alice.Home, ".config/systemd/user/us-web.service")
	if _, err := os.Stat(unitFile); err != nil {
		t.Fatalf("the user unit file: %v", err)
	}
	mainPID := func() string {
		t.Helper()
		out, _, err := bed.Exec(ctx, h, "runuser", "-u", alice.Name, "--", "env", "XDG_RUNTIME_DIR=/run/user/"+strconv.Itoa(alice.UID),
			"systemctl", "--user", "show", "-p", "MainPID", "--value", "us-web.service")
		if err != nil {
			t.Fatalf("MainPID of us-web in %s's manager: %v", alice.Name, err)
		}
		return strings.TrimSpace(out)
	}
	firstPID := mainPID()
	if firstPID == "0" || firstPID == "" {
		t.Fatalf("us-web runs no process in %s's manager after ensure", alice.Name)
	}

	// the host process, root's system service
	unit := fmt.Sprintf(userScopeHostProcess, storeURL, h.Name)
	if err := bed.WriteFile(h, "/etc/systemd/system/us-stado.service", []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, argv := range [][]string{{"systemctl", "daemon-reload"}, {"systemctl", "start", "us-stado.service"}} {
		if _, _, err := bed.Exec(ctx, h, argv...); err != nil {
			t.Fatal(err)
		}
	}

	st, err := store.OpenFileStore(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	readBeacon := func() *beacon.Beacon { return storedBeacon(ctx, st, h.Name) }
	report := func(b *beacon.Beacon) *beacon.UnitReport { return unitOf(b, "us-web") }

	// 1. observed active in stado-alice's manager, with her unit's pid, and
	// answering
	eventually(t, 30*time.Second, "the beacon reads us-web active in the user manager and answering", func() (bool, string) {
		b := readBeacon()
		if b == nil {
			return false, "no beacon"
		}
		r := report(b)
		if r == nil {
			return false, fmt.Sprintf("pass %d: no us-web report (refusals %+v)", b.Pass, b.Refusals)
		}
		ok := r.State == beacon.StateActive && strconv.Itoa(r.PID) == firstPID &&
			r.Answering != nil && r.Answering.State == beacon.AnswerFinished && r.Answering.Finished.Answered != nil && r.Answering.Finished.Answered.Successful
		return ok, fmt.Sprintf("pass %d: %s pid %d (want %s), answering %+v, refusals %+v", b.Pass, r.State, r.PID, firstPID, r.Answering, b.Refusals)
	})
	statusOut := c.mustRun(t, "service", "status", "us-web", "--json")
	if !strings.Contains(statusOut, `"state": "active"`) {
		t.Errorf("service status: %s", statusOut)
	}

	// 2. made to stand: the step removes the marker, the user manager
	// restarts it
	if err := bed.WriteFile(h, "/var/tmp/us-web.marker", []byte("held\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var rec register.Recovery
	eventually(t, 60*time.Second, "us-web stood, was restarted through the user manager and answered again", func() (bool, string) {
		b := readBeacon()
		if b == nil {
			return false, "no beacon"
		}
		r := report(b)
		if r == nil || r.Answering == nil {
			return false, "no answering block"
		}
		if len(r.Answering.Recovery) > 0 {
			json.Unmarshal(r.Answering.Recovery, &rec)
		}
		done := rec.State == register.Attempted && r.Answering.State == beacon.AnswerFinished &&
			r.Answering.Finished.Answered != nil && r.Answering.Finished.Answered.Successful
		return done, fmt.Sprintf("pass %d: %s answering %s, recovery %+v", b.Pass, r.State, r.Answering.State, rec.Restart)
	})
	secondPID := mainPID()
	if rec.Restart == nil || !rec.Restart.OK || rec.Restart.Scope != registry.ScopeUser || strconv.Itoa(rec.Restart.PID) != secondPID || !rec.Complete {
		t.Errorf("recovery %+v, restart %+v: want a complete one with a user-scope restart to pid %s", rec, rec.Restart, secondPID)
	}
	if secondPID == firstPID || secondPID == "0" {
		t.Fatalf("us-web MainPID %s after the recovery, was %s: want a new process", secondPID, firstPID)
	}
	data, err := bed.ReadFile(h, "/var/tmp/us-home/.stado/service-recoveries.jsonl")
	if err != nil || !strings.Contains(string(data), `"scope":"user"`) {
		t.Errorf("register: %v\n%s", err, data)
	}

	// 3. the channel's restart reaches the same manager: `service restart`,
	// and the host a peer's recovery restarts through (repair.Reach over
	// the target's SSH client, as the target's ssh.user)
	c.mustRun(t, "service", "restart", "us-web", "--host", h.Name)
	thirdPID := mainPID()
	if thirdPID == secondPID || thirdPID == "0" {
		t.Errorf("us-web MainPID %s after service restart, was %s", thirdPID, secondPID)
	}
	doc, _, err := registry.Load(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	pool := sshclient.NewPool(&sshclient.Dialer{KnownHostsPath: bed.KnownHosts(), IdentityFiles: []string{bed.KeyPath()}, SSHConfigPath: bed.SSHConfig()})
	defer pool.Close()
	target, _ := doc.Target(h.Name)
	peer := repair.Reach{Name: h.Name, Host: pool.Connect()(*target)}
	rep := peer.Restart(ctx, registry.ScopeUser, "us-web.service")
	fourthPID := mainPID()
	if !rep.OK || strconv.Itoa(rep.PID) != fourthPID || fourthPID == thirdPID {
		t.Errorf("peer restart %+v; MainPID %s, was %s: want done with the new pid", rep, fourthPID, thirdPID)
	}

	// 4. no lingering, no session: the manager is gone and the beacon says
	// so, never missing
	bed.DisableLinger(t, h, alice)
	eventually(t, 30*time.Second, "the beacon reads us-web unobserved, its user manager not running", func() (bool, string) {
		b := readBeacon()
		if b == nil {
			return false, "no beacon"
		}
		r := report(b)
		if r == nil {
			return false, "no report"
		}
		if r.State == beacon.StateMissing {
			t.Errorf("pass %d: us-web reads missing while its manager is not running", b.Pass)
		}
		var named bool
		for _, ref := range b.Refusals {
			named = named || (ref.Code == "user_manager_down" && ref.Subject == "user "+alice.Name)
		}
		ok := r.State == beacon.StateUnobserved && strings.Contains(r.Sentence, "lingering is off") && named
		return ok, fmt.Sprintf("pass %d: %s %q refusals %+v", b.Pass, r.State, r.Sentence, b.Refusals)
	})
	_, listOut, _ := c.run(t, "service", "list")
	var row string
	for _, l := range strings.Split(listOut, "\n") {
		if strings.Contains(l, "us-web") {
			row = l
		}
	}
	if f := strings.Fields(row); len(f) < 4 || f[3] != beacon.StateUnobserved || !strings.Contains(row, "lingering is off") {
		t.Errorf("service list does not read us-web unobserved with its reason:\n%s", listOut)
	}
	t.Logf("service list:\n%s", listOut)
}

// The opt-in is one journey's: once its test ends, the host is back to the
// bed's default (logind masked and stopped, no user manager, no linger
// file on the machine).
func TestLingeringForOneJourneyIsUndoneWhenItEnds(t *testing.T) {
	t.Parallel()
	bed := testbed.Shared(t, 1)
	hosts := bed.Hosts()
	h := hosts[len(hosts)-1]
	ctx := context.Background()
	var uid int
	t.Run("lingering", func(t *testing.T) {
		u := bed.AddUser(t, "stado-linger")
		uid = u.UID
		bed.EnableLinger(t, h, u)
		out, _, _ := bed.Exec(ctx, h, "systemctl", "is-active", "systemd-logind.service", fmt.Sprintf("user@%d.service", u.UID))
		if strings.Fields(out)[0] != "active" || strings.Fields(out)[1] != "active" {
			t.Fatalf("logind and the user manager: %q", out)
		}
	})
	out, _, _ := bed.Exec(ctx, h, "systemctl", "is-enabled", "systemd-logind.service")
	if strings.TrimSpace(out) != "masked" {
		t.Errorf("logind is %q after the journey, want masked as the bed boots it", strings.TrimSpace(out))
	}
	out, _, _ = bed.Exec(ctx, h, "systemctl", "is-active", "systemd-logind.service", fmt.Sprintf("user@%d.service", uid))
	for _, f := range strings.Fields(out) {
		if f == "active" {
			t.Errorf("a unit still active after the journey: %q", out)
		}
	}
	if _, err := os.Stat("/var/lib/systemd/linger/stado-linger"); err == nil {
		t.Error("the linger file outlived the journey")
	}
}
