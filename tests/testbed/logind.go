package testbed

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// logindHolds serializes the journeys that start logind in one host: the
// cleanup of one would stop it under the other.
var logindHolds struct {
	mu   sync.Mutex
	held map[string]chan struct{} // host -> closed when released
}

// holdLogind waits until no other test has logind started in h and claims
// h; the returned func releases it.
func holdLogind(t testing.TB, h Host) func() {
	for {
		logindHolds.mu.Lock()
		if logindHolds.held == nil {
			logindHolds.held = map[string]chan struct{}{}
		}
		ch, busy := logindHolds.held[h.Name]
		if !busy {
			mine := make(chan struct{})
			logindHolds.held[h.Name] = mine
			logindHolds.mu.Unlock()
			return func() {
				logindHolds.mu.Lock()
				delete(logindHolds.held, h.Name)
				logindHolds.mu.Unlock()
				close(mine)
			}
		}
		logindHolds.mu.Unlock()
		t.Logf("testbed: waiting for another test to stop logind in %s", h.Name)
		<-ch
	}
}

// Login users and user managers. The bed masks systemd-logind in every
// host (it is the heavier half of a host's memory), so no host runs a
// systemd user manager. A journey that needs one opts in for itself with
// AddUser and EnableLinger; both undo what they did in t.Cleanup, so the
// journeys after it see the default hosts.

// LoginUser is a user AddUser created.
type LoginUser struct {
	Name string
	UID  int
	Home string
}

// AddUser creates the login user name with a home under /home and the
// bed's key in its authorized_keys, so ssh as that user (and stado's
// channel, with ssh.user set to it) logs in on every host, and removes the
// user and its home when t ends. It acts on the machine: the hosts share
// its /etc/passwd and /home. A user of that name left by a killed run is
// reused. Use a name no one else uses (stado-…).
func (b *Bed) AddUser(t testing.TB, name string) LoginUser {
	t.Helper()
	if !strings.HasPrefix(name, "stado-") {
		t.Fatalf("testbed: user %q: the bed's users are named stado-…", name)
	}
	home := filepath.Join("/home", name)
	if _, err := user.Lookup(name); err != nil {
		out, err := exec.Command("useradd", "--create-home", "--home-dir", home, "--shell", "/bin/sh", "--user-group", name).CombinedOutput()
		if err != nil {
			t.Fatalf("testbed: useradd %s: %v\n%s", name, err, out)
		}
	}
	t.Cleanup(func() {
		if out, err := exec.Command("userdel", "--remove", name).CombinedOutput(); err != nil {
			t.Logf("testbed: userdel %s: %v\n%s", name, err, out)
		}
	})
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatalf("testbed: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	pub, err := os.ReadFile(b.KeyPath() + ".pub")
	if err != nil {
		t.Fatalf("testbed: %v", err)
	}
	ssh := filepath.Join(u.HomeDir, ".ssh")
	if err := os.MkdirAll(ssh, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ssh, "authorized_keys"), pub, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{u.HomeDir, ssh, filepath.Join(ssh, "authorized_keys")} {
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	return LoginUser{Name: name, UID: uid, Home: u.HomeDir}
}

// EnableLinger starts systemd-logind in h and has it keep u's systemd
// user manager running without a session (loginctl enable-linger), and
// returns once that manager is up. When t ends it disables lingering,
// stops the user managers logind started in h and logind itself, and
// masks logind again, as the bed boots it. One test at a time has logind
// started in a host: another waits here until the first one's cleanup.
// Meanwhile every ssh login to h
// opens a logind session (pam_systemd), which other journeys on h do not
// expect: use a host no other journey of the process needs at that time,
// or accept that.
func (b *Bed) EnableLinger(t testing.TB, h Host, u LoginUser) {
	t.Helper()
	release := holdLogind(t, h)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t.Cleanup(func() {
		b.disableLinger(t, h, u)
		release()
	})
	for _, argv := range [][]string{
		{"systemctl", "unmask", "systemd-logind.service"},
		{"systemctl", "start", "systemd-logind.service"},
		{"loginctl", "enable-linger", u.Name},
	} {
		if _, _, err := b.Exec(ctx, h, argv...); err != nil {
			t.Fatalf("testbed: %v", err)
		}
	}
	unit := fmt.Sprintf("user@%d.service", u.UID)
	for {
		out, _, _ := b.Exec(ctx, h, "systemctl", "is-active", unit)
		if strings.TrimSpace(out) == "active" {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d/root/run/user/%d/systemd/private", b.mustInit(t, h), u.UID)); err == nil {
				return
			}
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			st, _, _ := b.Exec(context.Background(), h, "systemctl", "status", "--no-pager", unit)
			t.Fatalf("testbed: %s did not come up in %s: %v\n%s", unit, h.Name, err, st)
		}
	}
}

// DisableLinger turns u's lingering off in h and stops its user manager,
// as a journey does to see a user with no manager; logind keeps running
// until the cleanup of EnableLinger.
func (b *Bed) DisableLinger(t testing.TB, h Host, u LoginUser) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, argv := range [][]string{
		{"loginctl", "disable-linger", u.Name},
		{"systemctl", "stop", fmt.Sprintf("user@%d.service", u.UID), fmt.Sprintf("user-runtime-dir@%d.service", u.UID)},
	} {
		if _, _, err := b.Exec(ctx, h, argv...); err != nil {
			t.Fatalf("testbed: %v", err)
		}
	}
}

// disableLinger undoes EnableLinger: no lingering, no user managers, no
// logind, logind masked.
func (b *Bed) disableLinger(t testing.TB, h Host, u LoginUser) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	steps := [][]string{
		{"loginctl", "disable-linger", u.Name},
		{"loginctl", "terminate-user", u.Name},
		{"systemctl", "stop", "user@*.service", "user-runtime-dir@*.service"},
		{"systemctl", "stop", "systemd-logind.service"},
		{"systemctl", "mask", "systemd-logind.service"},
		{"systemctl", "reset-failed", "user@*.service", "user-runtime-dir@*.service", "systemd-logind.service"},
	}
	for _, argv := range steps {
		if _, _, err := b.Exec(ctx, h, argv...); err != nil && argv[0] != "loginctl" {
			t.Logf("testbed: undo lingering in %s: %v", h.Name, err)
		}
	}
	// /var/lib is the machine's: the linger file must not outlive the test.
	os.Remove(filepath.Join("/var/lib/systemd/linger", u.Name))
}

func (b *Bed) mustInit(t testing.TB, h Host) int {
	p, err := b.initPid(h)
	if err != nil {
		t.Fatalf("testbed: %v", err)
	}
	return p
}
