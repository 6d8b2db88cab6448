package units

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"

	"github.com/godbus/dbus/v5"

	sdbus "github.com/coreos/go-systemd/v22/dbus"

	"github.com/wisent/stado/declaration"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
)

// Where a user's systemd manager and logind keep their state.
const (
	// UserRuntimeRoot holds each user's runtime directory, /run/user/<uid>,
	// which logind creates while the user has a session or lingers.
	UserRuntimeRoot = "/run/user"
	// LingerDir holds one empty file per user logind keeps a manager
	// running for without a session (loginctl enable-linger).
	LingerDir = "/var/lib/systemd/linger"
)

// ScopeOwner is the user whose units a target's user-scope declarations
// are: the target's ssh.user (root when empty). It is the same rule
// `service ensure` follows, since the channel it installs through runs as
// that login user, whose home places the unit file
// (declaration.DefaultUnitPath) and whose manager loads it.
func ScopeOwner(t registry.Target) string {
	if t.SSH.User != "" {
		return t.SSH.User
	}
	return "root"
}

// Account is a user of this host as the user managers need it.
type Account struct {
	Name string
	UID  int
	Home string
}

// LookupAccount finds a user of this host by name. A user the host does
// not know is a not_found refusal.
func LookupAccount(name string) (Account, error) {
	u, err := user.Lookup(name)
	if err != nil {
		var unknown user.UnknownUserError
		if errors.As(err, &unknown) {
			return Account{}, refusal.New(refusal.NotFound, "this host has no user %s", name)
		}
		return Account{}, fmt.Errorf("look up user %s: %w", name, err)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return Account{}, fmt.Errorf("look up user %s: uid %q: %w", name, u.Uid, err)
	}
	return Account{Name: u.Username, UID: uid, Home: u.HomeDir}, nil
}

// currentAccount is the calling user, with home as its home.
func currentAccount(home string) Account {
	a := Account{UID: os.Getuid(), Home: home}
	if u, err := user.Current(); err == nil {
		a.Name = u.Username
		if home == "" {
			a.Home = u.HomeDir
		}
	}
	if a.Name == "" {
		a.Name = strconv.Itoa(a.UID)
	}
	return a
}

// UserManagerDownError says a user's own service manager is not running,
// so none of that user's units can be read or acted on: for systemd, no
// user manager (the user has no session and does not linger); for launchd,
// no gui/<uid> domain (no one is logged in to that user's graphical
// session). Its code is user_manager_down.
type UserManagerDownError struct {
	User string
	UID  int
	// Manager is "systemd" or "launchd".
	Manager string
	// Reason says what the host can tell about why.
	Reason string
}

func (e *UserManagerDownError) Error() string {
	return fmt.Sprintf("the %s user manager of %s (uid %d) is not running: %s", e.Manager, e.User, e.UID, e.Reason)
}

// RefusalCode is the stable machine code the CLI and the beacon report.
func (e *UserManagerDownError) RefusalCode() refusal.Code { return refusal.UserManagerDown }

// UserBusPath is the socket stado reaches a user's systemd manager on:
// the manager's own private socket, <runtime dir>/systemd/private, the
// one systemctl --user uses. systemd admits on it the manager's own user
// and root (it checks the peer's credentials), so one path serves a host
// process running as root, acting for any user, and the host channel
// running as the login user itself. The user's message bus
// (/run/user/<uid>/bus) is a dbus-daemon only there when dbus-user-session
// is installed, and it admits only its owner.
func UserBusPath(runtimeDir string) string { return filepath.Join(runtimeDir, "systemd", "private") }

// userRuntimeDir is the runtime directory of a: XDG_RUNTIME_DIR for the
// calling user when set, else /run/user/<uid>.
func userRuntimeDir(a Account) string {
	if a.UID == os.Getuid() {
		if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" && filepath.IsAbs(d) {
			return d
		}
	}
	return filepath.Join(UserRuntimeRoot, strconv.Itoa(a.UID))
}

// NewUserSystemd connects to the systemd user manager of a over its
// private socket (UserBusPath) and returns a Manager of its units, whose
// files live under a.Home. A manager that is not running is a
// *UserManagerDownError naming why, as far as logind's state tells.
func NewUserSystemd(ctx context.Context, a Account, r Runner) (*Systemd, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("connect to the systemd user manager of %s: %w", a.Name, err)
	}
	sock := UserBusPath(userRuntimeDir(a))
	if _, err := os.Stat(sock); errors.Is(err, fs.ErrNotExist) {
		return nil, downError(a, "")
	}
	live := context.WithoutCancel(ctx)
	conn, err := sdbus.NewConnection(func() (*dbus.Conn, error) {
		c, err := dbus.Dial("unix:path="+sock, dbus.WithContext(live))
		if err != nil {
			return nil, err
		}
		// EXTERNAL as the caller's own uid: systemd reads the same from the
		// socket and admits root or the manager's user. No Hello: this is
		// a direct connection to the manager, not a bus.
		if err := c.Auth([]dbus.Auth{dbus.AuthExternal(strconv.Itoa(os.Getuid()))}); err != nil {
			c.Close()
			return nil, err
		}
		return c, nil
	})
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, fs.ErrNotExist) {
			return nil, downError(a, "")
		}
		return nil, fmt.Errorf("connect to the systemd user manager of %s on %s: %w", a.Name, sock, err)
	}
	if r == nil {
		r = ExecRunner{}
	}
	return &Systemd{conn: conn, scope: declaration.ScopeUser, home: a.Home, account: &a, runner: r, inFlight: make(chan struct{}, propsInFlight)}, nil
}

// downError says why a's systemd manager is not running, from logind's
// files: lingering on or off, a runtime directory or none.
func downError(a Account, detail string) *UserManagerDownError {
	e := &UserManagerDownError{User: a.Name, UID: a.UID, Manager: "systemd"}
	_, lerr := os.Stat(filepath.Join(LingerDir, a.Name))
	lingers := lerr == nil
	switch {
	case lingers:
		e.Reason = fmt.Sprintf("lingering is on, yet user@%d.service is not running (systemctl status user@%d.service says why)", a.UID, a.UID)
	default:
		e.Reason = fmt.Sprintf("%s has no session and lingering is off (loginctl enable-linger %s keeps the manager running)", a.Name, a.Name)
	}
	if detail != "" {
		e.Reason += "; " + detail
	}
	return e
}

// UserJournalArgv is the journalctl command that reads the last lines a
// user unit of uid printed, from any user's journal (root reads them all):
// the entries of _SYSTEMD_USER_UNIT=unit written by uid.
func UserJournalArgv(uid int, unit string, lines int) []string {
	return []string{"journalctl", "_UID=" + strconv.Itoa(uid), "_SYSTEMD_USER_UNIT=" + unit,
		"-n", strconv.Itoa(lines), "-o", "short-iso", "--no-pager"}
}

// UserManagers opens, and keeps open, the user-scope managers of the users
// a host process acts for: on linux each user's systemd manager
// (NewUserSystemd), on darwin launchd's gui/<uid> domain of the user. It is
// safe for concurrent use. A manager that failed is dropped with Forget, so
// the next call connects afresh (the user manager may have restarted).
type UserManagers struct {
	// GOOS selects the init system; "" means this machine's.
	GOOS string
	// Runner runs launchctl and journalctl; nil means ExecRunner.
	Runner Runner
	// Lookup finds a user; nil means LookupAccount.
	Lookup func(name string) (Account, error)

	mu   sync.Mutex
	open map[string]*userManager
}

type userManager struct {
	m     Manager
	close func()
}

func (u *UserManagers) runner() Runner {
	if u.Runner != nil {
		return u.Runner
	}
	return ExecRunner{}
}

// Manager returns the user-scope manager of the user named name.
func (u *UserManagers) Manager(ctx context.Context, name string) (Manager, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if um, ok := u.open[name]; ok {
		return um.m, nil
	}
	lookup := u.Lookup
	if lookup == nil {
		lookup = LookupAccount
	}
	a, err := lookup(name)
	if err != nil {
		return nil, err
	}
	um, err := openUserManager(ctx, u.GOOS, a, u.runner())
	if err != nil {
		return nil, err
	}
	if u.open == nil {
		u.open = map[string]*userManager{}
	}
	u.open[name] = um
	return um.m, nil
}

func openUserManager(ctx context.Context, goos string, a Account, r Runner) (*userManager, error) {
	if goos == "" {
		goos = runtime.GOOS
	}
	switch goos {
	case declaration.OSLinux:
		m, err := NewUserSystemd(ctx, a, r)
		if err != nil {
			return nil, err
		}
		return &userManager{m: m, close: m.Close}, nil
	case declaration.OSDarwin:
		return &userManager{m: LaunchdFor(r, declaration.ScopeUser, "", a), close: func() {}}, nil
	default:
		return nil, fmt.Errorf("no init system stado drives on %s", goos)
	}
}

// Forget closes and drops the manager of name, if open.
func (u *UserManagers) Forget(name string) {
	u.mu.Lock()
	um, ok := u.open[name]
	delete(u.open, name)
	u.mu.Unlock()
	if ok {
		um.close()
	}
}

// Close closes every open manager.
func (u *UserManagers) Close() {
	u.mu.Lock()
	open := u.open
	u.open = nil
	u.mu.Unlock()
	for _, um := range open {
		um.close()
	}
}

// GUIDomain is launchd's domain of a user's graphical session, gui/<uid>,
// where launch agents run.
func GUIDomain(uid int) string { return "gui/" + strconv.Itoa(uid) }
