package units

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/wisent/stado/declaration"
)

// MaxFileBytes bounds one unit file or drop-in read from a host.
const MaxFileBytes = 1 << 20

// UnitFile is a unit's file as the host holds it: where the init system
// loaded it from, its bytes, and its drop-ins in the order they apply.
type UnitFile struct {
	Unit    string   `json:"unit"`
	Path    string   `json:"path"`
	Content string   `json:"content"`
	DropIns []DropIn `json:"dropins,omitempty"`
	Home    string   `json:"home"` // the login user's home, which places user units
	// Hostname is the name of the host the file was read on (what
	// systemd's %H stands for there); "" when unknown.
	Hostname string    `json:"hostname,omitempty"`
	Read     time.Time `json:"read"`
}

// DropIn is one drop-in file of a unit.
type DropIn struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// DropInBytes returns the drop-ins' contents in order, as ParseFile takes them.
func (f *UnitFile) DropInBytes() [][]byte {
	out := make([][]byte, len(f.DropIns))
	for i, d := range f.DropIns {
		out[i] = []byte(d.Content)
	}
	return out
}

// FileLocator is implemented by Managers that can say which file the init
// system loaded a unit from, and its drop-ins.
type FileLocator interface {
	// UnitFiles returns the unit's file and drop-in paths; "" when the unit
	// has no file (a transient unit).
	UnitFiles(ctx context.Context, unit string) (path string, dropins []string, err error)
}

// UnitFiles reads FragmentPath and DropInPaths over D-Bus.
func (m *Systemd) UnitFiles(ctx context.Context, unit string) (string, []string, error) {
	p, err := m.conn.GetUnitPropertyContext(ctx, unit, "FragmentPath")
	if err != nil {
		return "", nil, fmt.Errorf("read the file of %s: %w", unit, err)
	}
	path, _ := p.Value.Value().(string)
	d, err := m.conn.GetUnitPropertyContext(ctx, unit, "DropInPaths")
	if err != nil {
		return "", nil, fmt.Errorf("read the drop-ins of %s: %w", unit, err)
	}
	dropins, _ := d.Value.Value().([]string)
	return path, dropins, nil
}

// UnitFiles is the plist launchd loaded the label from (the path
// `launchctl print` names), else the one it was installed from, else its
// domain's default place. launchd has no drop-ins.
func (l *Launchd) UnitFiles(ctx context.Context, label string) (string, []string, error) {
	return l.loadedPlistPath(ctx, label), nil, nil
}

// Environment reads systemd's own reading of a service's Environment=
// (KEY=VALUE words) over D-Bus.
func (m *Systemd) Environment(ctx context.Context, unit string) ([]string, error) {
	p, err := m.conn.GetServicePropertyContext(ctx, unit, "Environment")
	if err != nil {
		return nil, fmt.Errorf("read the environment of %s: %w", unit, err)
	}
	env, _ := p.Value.Value().([]string)
	return env, nil
}

// ReadUnitFile reads the file (and drop-ins) m loaded unit from; nil when it
// has none or the file is gone. now stamps the read; the file carries this
// host's name (os.Hostname), which ParseUnitOn writes out for %H.
func ReadUnitFile(ctx context.Context, m Manager, unit, home string, now time.Time) (*UnitFile, error) {
	loc, ok := m.(FileLocator)
	if !ok {
		return nil, fmt.Errorf("read the file of %s: this init system cannot say where it loaded it from", unit)
	}
	path, dropins, err := loc.UnitFiles(ctx, unit)
	if err != nil || path == "" {
		return nil, err
	}
	content, err := readBounded(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	f := &UnitFile{Unit: unit, Path: path, Content: string(content), Home: home, Read: now.UTC()}
	if h, err := os.Hostname(); err == nil {
		f.Hostname = h
	}
	if f.DropIns, err = readDropInPaths(dropins); err != nil {
		return nil, err
	}
	return f, nil
}

// readDropInPaths reads each drop-in at paths, in order, bounded by
// MaxFileBytes.
func readDropInPaths(paths []string) ([]DropIn, error) {
	var out []DropIn
	for _, p := range paths {
		b, err := readBounded(p)
		if err != nil {
			return nil, err
		}
		out = append(out, DropIn{Path: p, Content: string(b)})
	}
	return out, nil
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(b) > MaxFileBytes {
		return nil, fmt.Errorf("read %s: larger than %d bytes", path, MaxFileBytes)
	}
	return b, nil
}

// Open connects to this host's init system for scope ("system" or "user"):
// systemd over D-Bus on linux, launchctl on darwin. home is the login user's
// home. The returned func closes it. It is OpenDomain with no declared
// launchd domain.
func Open(ctx context.Context, goos, scope, home string) (Manager, func(), error) {
	return OpenDomain(ctx, goos, scope, "", home)
}

// OpenDomain is Open with the target's declared launchd domain (registry
// launchd_domain: "system", "gui/<uid>" or "user/<uid>"), which on darwin
// is the domain user-scope units are bootstrapped in and acted on
// (LaunchdFor); "" keeps gui/<uid> of the login user. On linux the domain
// must be "".
func OpenDomain(ctx context.Context, goos, scope, domain, home string) (Manager, func(), error) {
	switch goos {
	case declaration.OSLinux:
		if domain != "" {
			return nil, nil, fmt.Errorf("a launchd domain (%s) names no systemd manager", domain)
		}
		m, err := NewSystemd(ctx, scope, home, ExecRunner{})
		if err != nil {
			return nil, nil, err
		}
		return m, m.Close, nil
	case declaration.OSDarwin:
		return LaunchdFor(ExecRunner{}, scope, domain, currentAccount(home)), func() {}, nil
	default:
		return nil, nil, fmt.Errorf("no init system stado drives on %s", goos)
	}
}

// LaunchdFor is the launchd manager of scope for account a: system scope
// is the system domain; user scope is the declared domain when one is
// given, else gui/<uid> of a. A user-scope unit keeps its plist in a's
// LaunchAgents whichever domain it runs in.
func LaunchdFor(r Runner, scope, domain string, a Account) *Launchd {
	if scope != declaration.ScopeUser {
		return NewLaunchd(r, "system", a.Home)
	}
	if domain == "" {
		domain = GUIDomain(a.UID)
	}
	l := NewLaunchd(r, domain, a.Home)
	l.User, l.Scope = a.Name, declaration.ScopeUser
	return l
}

// ReadDropInFiles is ReadDropIns with each drop-in's path, so blockers
// name it.
func ReadDropInFiles(file, dir string) ([]DropIn, error) {
	explicit := dir != ""
	if !explicit {
		dir = file + ".d"
	}
	entries, err := os.ReadDir(dir)
	if err != nil && (explicit || !errors.Is(err, os.ErrNotExist)) {
		return nil, fmt.Errorf("read drop-ins %s: %w", dir, err)
	}
	var out []DropIn
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".conf") || e.IsDir() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		d, err := readBounded(p)
		if err != nil {
			return nil, fmt.Errorf("read drop-in: %w", err)
		}
		out = append(out, DropIn{Path: p, Content: string(d)})
	}
	return out, nil
}

// ReadDropIns reads the *.conf drop-ins of a systemd unit file in name
// order from dir, or from FILE.d when dir is "" (a missing FILE.d holds
// none; a missing dir named explicitly is an error).
func ReadDropIns(file, dir string) ([][]byte, error) {
	explicit := dir != ""
	if !explicit {
		dir = file + ".d"
	}
	entries, err := os.ReadDir(dir)
	if err != nil && (explicit || !errors.Is(err, os.ErrNotExist)) {
		return nil, fmt.Errorf("read drop-ins %s: %w", dir, err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".conf") && !e.IsDir() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	var out [][]byte
	for _, n := range names {
		d, err := readBounded(filepath.Join(dir, n))
		if err != nil {
			return nil, fmt.Errorf("read drop-in: %w", err)
		}
		out = append(out, d)
	}
	return out, nil
}

// Reloader is implemented by Managers that can make the init system read
// its unit files and drop-ins again.
type Reloader interface {
	Reload(ctx context.Context) error
}

// Reload is systemd's daemon-reload over D-Bus.
func (m *Systemd) Reload(ctx context.Context) error {
	if err := m.conn.ReloadContext(ctx); err != nil {
		return fmt.Errorf("daemon-reload: %w", err)
	}
	return nil
}
