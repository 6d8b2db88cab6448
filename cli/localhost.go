package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/wisent/stado/refusal"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/repair"
	"github.com/wisent/stado/units"
)

// localHost is the channel.Host of the machine `stado host channel` runs
// on: the unit verbs go to this host's init system through units.Manager,
// repair-step runs the catalog's argv payload (no shell), port-owner reads
// /proc. Each call opens what it needs and closes it before returning: the
// channel serves one verb per process.
//
// It enforces what the grammar cannot know: a user-scope unit path lies
// below the login user's home, and repair-step passes only the environment
// names its step declares.
type localHost struct {
	env *Env
	// goos is the OS the verbs are checked against; runtime.GOOS.
	goos string
	// home is the login user's home directory.
	home string
	// procRoot is /proc; tests point it elsewhere only to read fixtures.
	procRoot string
	// manager opens the init system's manager for a scope.
	manager func(ctx context.Context, scope string) (units.Manager, func(), error)
	// catalog loads the catalog repair-step reads its payloads from.
	catalog func(ctx context.Context) (*catalog.Catalog, error)
}

var _ channel.Host = (*localHost)(nil)

// newLocalHost returns the Host of this machine for env.
func newLocalHost(env *Env) *localHost {
	h := &localHost{env: env, goos: runtime.GOOS, home: homeDir(env), procRoot: "/proc"}
	h.manager = func(ctx context.Context, scope string) (units.Manager, func(), error) {
		return hostUnitManager(ctx, env, scope == channel.ScopeUser)
	}
	h.catalog = func(ctx context.Context) (*catalog.Catalog, error) { return hostCatalog(ctx, env) }
	return h
}

// hostCatalog is the catalog of the store this host names ($STADO_STORE or
// ~/.stado/store), which may extend the shipped one. A host whose store
// cannot be read still has the shipped catalog.
func hostCatalog(ctx context.Context, env *Env) (*catalog.Catalog, error) {
	if env.StoreURL == "" {
		env.StoreURL = env.Getenv("STADO_STORE")
		if env.StoreURL == "" {
			env.StoreURL = defaultStoreURL(env)
		}
	}
	st, err := env.OpenStore(ctx, env.StoreURL)
	if err != nil {
		return catalog.Shipped(), nil
	}
	defer st.Close()
	cat, err := catalog.Load(ctx, st)
	if err != nil {
		var val *registry.ValidationError
		if errors.As(err, &val) {
			return nil, err // a site catalog that is wrong is not silently ignored
		}
		return catalog.Shipped(), nil
	}
	return cat, nil
}

// hostRefusal is a refusal the host itself makes after the grammar passed.
type hostRefusal struct {
	code refusal.Code
	msg  string
}

func (r *hostRefusal) Error() string             { return r.msg }
func (r *hostRefusal) RefusalCode() refusal.Code { return r.code }

func hostRefuse(code refusal.Code, format string, args ...any) error {
	return &hostRefusal{code: code, msg: fmt.Sprintf(format, args...)}
}

func (h *localHost) OS() string { return h.goos }

// checkPath refuses a user-scope unit path outside the login user's home.
// The grammar already holds the path to a unit directory named after the
// unit; it cannot know whose home that directory is in.
func (h *localHost) checkPath(scope, path string) error {
	if scope != channel.ScopeUser {
		return nil
	}
	home := filepath.Clean(h.home)
	if home == "/" || home == "." || !strings.HasPrefix(filepath.Clean(path), home+"/") {
		return hostRefuse(channel.CodeInvalidPath, "user unit path %s is not below the login user's home %s", path, h.home)
	}
	return nil
}

func (h *localHost) withManager(ctx context.Context, scope string, fn func(units.Manager) (any, error)) (any, error) {
	m, closeFn, err := h.manager(ctx, scope)
	if err != nil {
		return nil, err
	}
	defer closeFn()
	return fn(m)
}

// UnitInstall writes content as the unit file (atomically; equal bytes are
// left alone) and makes the init system read it. Content that is not a unit
// file of this OS is refused before anything is written.
func (h *localHost) UnitInstall(ctx context.Context, scope, unit, path string, content []byte) (any, error) {
	if err := h.checkPath(scope, path); err != nil {
		return nil, err
	}
	if units.IsPlist(content) != (h.goos == registry.OSDarwin) {
		return nil, hostRefuse(channel.CodeInvalidContent, "the content for %s is not a %s unit file", unit, h.goos)
	}
	if _, err := units.ParseFile(path, content, nil); err != nil {
		return nil, hostRefuse(channel.CodeInvalidContent, "the content for %s cannot be read as a unit: %v", unit, err)
	}
	s := registry.Service{Name: unit, Unit: unit, UnitPath: path, Scope: scope}
	return h.withManager(ctx, scope, func(m units.Manager) (any, error) {
		return m.Install(ctx, s, content)
	})
}

// removeResult is what unit-remove reports.
type removeResult struct {
	Unit    string `json:"unit"`
	Path    string `json:"path"`
	Removed bool   `json:"removed"` // a file was there
}

// UnitRemove stops and unloads the unit and deletes its file.
func (h *localHost) UnitRemove(ctx context.Context, scope, unit, path string) (any, error) {
	if err := h.checkPath(scope, path); err != nil {
		return nil, err
	}
	_, statErr := os.Stat(path)
	s := registry.Service{Name: unit, Unit: unit, UnitPath: path, Scope: scope}
	return h.withManager(ctx, scope, func(m units.Manager) (any, error) {
		if err := m.Remove(ctx, s); err != nil {
			return nil, err
		}
		return removeResult{Unit: unit, Path: path, Removed: statErr == nil}, nil
	})
}

// control runs op on a loaded unit and reports its verdict after.
func (h *localHost) control(ctx context.Context, scope, unit string, op func(units.Manager) error) (any, error) {
	return h.withManager(ctx, scope, func(m units.Manager) (any, error) {
		if err := op(m); err != nil {
			if v, serr := m.Show(ctx, unit); serr == nil && v.State == units.StateMissing {
				return nil, &units.NotLoadedError{Unit: unit}
			}
			return nil, err
		}
		return m.Show(ctx, unit)
	})
}

func (h *localHost) UnitStart(ctx context.Context, scope, unit string) (any, error) {
	return h.control(ctx, scope, unit, func(m units.Manager) error { return m.Start(ctx, unit) })
}

func (h *localHost) UnitStop(ctx context.Context, scope, unit string) (any, error) {
	return h.control(ctx, scope, unit, func(m units.Manager) error { return m.Stop(ctx, unit) })
}

// UnitRestart restarts through the init system's own restart, which clears
// a failed state first.
func (h *localHost) UnitRestart(ctx context.Context, scope, unit string) (any, error) {
	return h.control(ctx, scope, unit, func(m units.Manager) error { return m.Restart(ctx, unit) })
}

// UnitFile is a unit's file as the host holds it: where the init system
// loaded it from, its bytes, and its drop-ins in the order they apply.
type UnitFile struct {
	Unit    string    `json:"unit"`
	Path    string    `json:"path"`
	Content string    `json:"content"`
	DropIns []DropIn  `json:"dropins,omitempty"`
	Home    string    `json:"home"` // the login user's home, which places user units
	Read    time.Time `json:"read"`
}

// DropIn is one drop-in file of a unit.
type DropIn struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// ShowResult is what unit-show reports. File is set when exactly one unit
// was asked for and the init system has a file for it: adopt reads the unit
// through it, since the verb set has no file read of its own.
type ShowResult struct {
	Units []units.Verdict `json:"units"`
	File  *UnitFile       `json:"file,omitempty"`
}

// maxFileBytes bounds one unit file or drop-in unit-show returns.
const maxFileBytes = channel.MaxUnitBytes

func (h *localHost) UnitShow(ctx context.Context, scope string, names []string) (any, error) {
	return h.withManager(ctx, scope, func(m units.Manager) (any, error) {
		vs, err := m.ShowMany(ctx, names)
		if err != nil {
			return nil, err
		}
		res := ShowResult{Units: vs}
		if len(names) == 1 && vs[0].State != units.StateMissing {
			f, err := h.unitFile(ctx, scope, names[0])
			if err != nil {
				return nil, err
			}
			res.File = f
		}
		return res, nil
	})
}

// unitFile reads the file the init system loaded unit from; nil when it
// has none (a transient unit).
func (h *localHost) unitFile(ctx context.Context, scope, unit string) (*UnitFile, error) {
	var path string
	var dropins []string
	if h.goos == registry.OSDarwin {
		path = units.UnitPath(registry.Service{Unit: unit, Scope: scope}, registry.OSDarwin, h.home)
	} else {
		argv := []string{"systemctl"}
		if scope == channel.ScopeUser {
			argv = append(argv, "--user")
		}
		argv = append(argv, "show", "--property=FragmentPath", "--property=DropInPaths", "--", unit)
		out, err := units.ExecRunner{}.Run(ctx, argv)
		if err != nil {
			return nil, fmt.Errorf("read the file of %s: %w", unit, err)
		}
		for _, line := range strings.Split(string(out), "\n") {
			k, v, _ := strings.Cut(line, "=")
			switch k {
			case "FragmentPath":
				path = v
			case "DropInPaths":
				dropins = strings.Fields(v)
			}
		}
	}
	if path == "" {
		return nil, nil
	}
	content, err := readBounded(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	f := &UnitFile{Unit: unit, Path: path, Content: string(content), Home: h.home, Read: h.env.Now().UTC()}
	for _, d := range dropins {
		b, err := readBounded(d)
		if err != nil {
			return nil, err
		}
		f.DropIns = append(f.DropIns, DropIn{Path: d, Content: string(b)})
	}
	return f, nil
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(b) > maxFileBytes {
		return nil, fmt.Errorf("read %s: larger than %d bytes", path, maxFileBytes)
	}
	return b, nil
}

// logsResult is what unit-logs reports.
type logsResult struct {
	Unit  string   `json:"unit"`
	Lines []string `json:"lines"`
}

func (h *localHost) UnitLogs(ctx context.Context, scope, unit string, lines int) (any, error) {
	return h.withManager(ctx, scope, func(m units.Manager) (any, error) {
		v, err := m.Show(ctx, unit)
		if err != nil {
			return nil, err
		}
		if v.State == units.StateMissing {
			return nil, &units.NotLoadedError{Unit: unit}
		}
		ls, err := m.Logs(ctx, unit, lines)
		if err != nil {
			return nil, err
		}
		if ls == nil {
			ls = []string{}
		}
		return logsResult{Unit: unit, Lines: ls}, nil
	})
}

// EnvResult is what unit-env reports: the environment the unit's file (and
// its drop-ins) give its program, values included. Masking is the
// workstation's business; the channel is already the operator's own.
type EnvResult struct {
	Unit string            `json:"unit"`
	Path string            `json:"path"`
	Env  map[string]string `json:"env"`
	// Source is "file" when read from the unit file, "systemd" when the unit
	// file is one a declaration cannot represent and systemd's own reading
	// of its Environment= was taken instead.
	Source string `json:"source"`
}

func (h *localHost) UnitEnv(ctx context.Context, scope, unit string) (any, error) {
	v, err := h.withManager(ctx, scope, func(m units.Manager) (any, error) { return m.Show(ctx, unit) })
	if err != nil {
		return nil, err
	}
	if v.(units.Verdict).State == units.StateMissing {
		return nil, &units.NotLoadedError{Unit: unit}
	}
	f, err := h.unitFile(ctx, scope, unit)
	if err != nil {
		return nil, err
	}
	if f == nil {
		return nil, hostRefuse("not_found", "unit %s has no unit file", unit)
	}
	dropins := make([][]byte, len(f.DropIns))
	for i, d := range f.DropIns {
		dropins[i] = []byte(d.Content)
	}
	p, err := units.ParseFile(f.Path, []byte(f.Content), dropins)
	if err != nil {
		return nil, err
	}
	res := EnvResult{Unit: unit, Path: f.Path, Env: map[string]string{}, Source: "file"}
	if p.Complete || h.goos == registry.OSDarwin {
		for k, val := range p.Service.Env {
			res.Env[k] = val
		}
		return res, nil
	}
	argv := []string{"systemctl"}
	if scope == channel.ScopeUser {
		argv = append(argv, "--user")
	}
	out, err := units.ExecRunner{}.Run(ctx, append(argv, "show", "--property=Environment", "--value", "--", unit))
	if err != nil {
		return nil, fmt.Errorf("read the environment of %s: %w", unit, err)
	}
	res.Source = "systemd"
	for _, w := range strings.Fields(string(out)) {
		if k, val, ok := strings.Cut(w, "="); ok {
			res.Env[k] = val
		}
	}
	return res, nil
}

// listResult is what unit-list reports.
type listResult struct {
	Units []string `json:"units"`
}

func (h *localHost) UnitList(ctx context.Context, scope string) (any, error) {
	return h.withManager(ctx, scope, func(m units.Manager) (any, error) {
		names, err := m.ListLoaded(ctx)
		if err != nil {
			return nil, err
		}
		sort.Strings(names)
		if names == nil {
			names = []string{}
		}
		return listResult{Units: names}, nil
	})
}

// Listener is one socket listening on a port, with its owner when this
// host's process table shows it.
type Listener struct {
	Address string `json:"address"`
	Inode   uint64 `json:"inode"`
	PID     int    `json:"pid,omitempty"`
	Program string `json:"program,omitempty"`
	Unit    string `json:"unit,omitempty"`
}

// PortOwnerResult is what port-owner reports.
type PortOwnerResult struct {
	Port      int        `json:"port"`
	Listeners []Listener `json:"listeners"`
}

// PortOwner finds the TCP sockets listening on port (/proc/net/tcp and
// tcp6), the process holding each (its /proc/PID/fd links) and that
// process's systemd unit (/proc/PID/cgroup). Nothing listening is a
// not_found refusal. A socket whose process is outside this host's process
// table (another PID namespace) is reported without an owner.
func (h *localHost) PortOwner(ctx context.Context, port int) (any, error) {
	var ls []Listener
	for _, name := range []string{"tcp", "tcp6"} {
		found, err := listeningSockets(filepath.Join(h.procRoot, "net", name), port)
		if err != nil {
			return nil, err
		}
		ls = append(ls, found...)
	}
	if len(ls) == 0 {
		return nil, hostRefuse("not_found", "nothing listens on TCP port %d", port)
	}
	owners := socketOwners(h.procRoot, ls)
	for i := range ls {
		pid, ok := owners[ls[i].Inode]
		if !ok {
			continue
		}
		ls[i].PID = pid
		if comm, err := os.ReadFile(filepath.Join(h.procRoot, strconv.Itoa(pid), "comm")); err == nil {
			ls[i].Program = strings.TrimSpace(string(comm))
		}
		if cg, err := os.ReadFile(filepath.Join(h.procRoot, strconv.Itoa(pid), "cgroup")); err == nil {
			ls[i].Unit = unitOfCgroup(cg)
		}
	}
	return PortOwnerResult{Port: port, Listeners: ls}, nil
}

// tcpListen is the st column of a listening socket in /proc/net/tcp.
const tcpListen = "0A"

// listeningSockets reads one /proc/net/tcp-format file; a missing file
// (no IPv6) holds none.
func listeningSockets(path string, port int) ([]Listener, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var out []Listener
	sc := bufio.NewScanner(bytes.NewReader(data))
	first := true
	for sc.Scan() {
		if first { // header
			first = false
			continue
		}
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[3] != tcpListen {
			continue
		}
		addr, p, ok := decodeProcAddr(f[1])
		if !ok || p != port {
			continue
		}
		inode, err := strconv.ParseUint(f[9], 10, 64)
		if err != nil {
			continue
		}
		out = append(out, Listener{Address: addr, Inode: inode})
	}
	return out, sc.Err()
}

// decodeProcAddr reads "0100007F:1F90" (IPv4, or 32 hex digits for IPv6,
// each 32-bit word in host byte order, little-endian here) into an address
// and port.
func decodeProcAddr(s string) (string, int, bool) {
	hexAddr, hexPort, ok := strings.Cut(s, ":")
	if !ok {
		return "", 0, false
	}
	port, err := strconv.ParseUint(hexPort, 16, 16)
	if err != nil {
		return "", 0, false
	}
	raw := make([]byte, 0, 16)
	for i := 0; i+8 <= len(hexAddr); i += 8 {
		w, err := strconv.ParseUint(hexAddr[i:i+8], 16, 32)
		if err != nil {
			return "", 0, false
		}
		raw = append(raw, byte(w), byte(w>>8), byte(w>>16), byte(w>>24))
	}
	switch len(raw) {
	case 4:
		return fmt.Sprintf("%d.%d.%d.%d", raw[0], raw[1], raw[2], raw[3]), int(port), true
	case 16:
		var parts []string
		for i := 0; i < 16; i += 2 {
			parts = append(parts, strconv.FormatUint(uint64(raw[i])<<8|uint64(raw[i+1]), 16))
		}
		return "[" + strings.Join(parts, ":") + "]", int(port), true
	}
	return "", 0, false
}

// socketOwners maps the inodes of ls to the first process holding them.
func socketOwners(procRoot string, ls []Listener) map[uint64]int {
	want := map[string]uint64{}
	for _, l := range ls {
		want["socket:["+strconv.FormatUint(l.Inode, 10)+"]"] = l.Inode
	}
	owners := map[uint64]int{}
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return owners
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		fdDir := filepath.Join(procRoot, e.Name(), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue // gone, or not ours to read
		}
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
			if err != nil {
				continue
			}
			if inode, ok := want[link]; ok {
				if _, seen := owners[inode]; !seen {
					owners[inode] = pid
				}
			}
		}
		if len(owners) == len(want) {
			break
		}
	}
	return owners
}

// unitOfCgroup names the systemd unit of a /proc/PID/cgroup: the last
// path element ending in .service (or .scope) of the unified hierarchy, or
// of the name=systemd one on a hybrid host.
func unitOfCgroup(data []byte) string {
	var path string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[0] == "0" && f[1] == "" || f[1] == "name=systemd" {
			path = f[2]
			if f[1] == "name=systemd" {
				break
			}
		}
	}
	parts := strings.Split(path, "/")
	for i := len(parts) - 1; i >= 0; i-- {
		if strings.HasSuffix(parts[i], ".service") || strings.HasSuffix(parts[i], ".scope") {
			return parts[i]
		}
	}
	return ""
}

// RepairStep runs the catalog's payload for step on this OS: its argv (no
// shell) with the fixed program search path, HOME, the payload's
// environment and the caller's values of the names the step needs, under
// the payload's timeout. A name the step does not declare is refused
// before anything runs. A payload that exits nonzero or overruns is a
// failure carrying its exit status and the tail of its stderr.
func (h *localHost) RepairStep(ctx context.Context, step string, env map[string]string) (any, error) {
	cat, err := h.catalog(ctx)
	if err != nil {
		return nil, err
	}
	st, ok := cat.Step(step)
	if !ok {
		return nil, hostRefuse("not_found", "the repair catalog has no step %s", step)
	}
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !hasString(st.Needs, k) {
			return nil, hostRefuse(channel.CodeInvalidEnv, "repair step %s does not take %s (it takes %s)", step, k, needsList(st.Needs))
		}
	}
	// One step runner for every path: the same code a host's own recovery
	// and `stado repair --apply` use.
	rep := (&repair.Local{Catalog: cat, OS: h.goos, Home: h.home}).RunStep(ctx, "", step, env)
	switch {
	case rep.OK:
		return rep, nil
	case rep.Code == repair.CodeStepFailed || rep.Code == repair.CodeStepTimeout:
		return nil, fmt.Errorf("repair step %s: %s", step, oneLineText(rep.Refusal+"; output: "+rep.Output))
	default:
		return nil, hostRefuse(refusal.Code(rep.Code), "%s", rep.Refusal)
	}
}

func needsList(needs []string) string {
	if len(needs) == 0 {
		return "no variables"
	}
	return strings.Join(needs, ", ")
}

func hasString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func sortedEnvKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func oneLineText(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return "(empty)"
	}
	return strings.ReplaceAll(s, "\n", " | ")
}

// VersionResult is what version reports.
type VersionResult struct {
	Version  string `json:"version"`
	Protocol int    `json:"protocol"`
	OS       string `json:"os"`
	Home     string `json:"home"`
	User     string `json:"user,omitempty"`
}

func (h *localHost) Version(context.Context) (any, error) {
	return VersionResult{Version: Version, Protocol: channel.ProtocolVersion, OS: h.goos, Home: h.home, User: h.env.Getenv("USER")}, nil
}
