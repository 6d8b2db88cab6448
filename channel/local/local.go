// Package local is the Host of the machine it runs on: the channel verbs
// carried out through this host's init system (units.Manager: systemd over
// D-Bus, launchd through launchctl), its unit files, and its port owners
// (units.PortReader: /proc on linux, lsof and ps on darwin). It is what
// `stado host channel` serves, and what tests drive in-process with a
// Manager of their own.
//
// It is also the host end of repair: StepRunner runs a repair step's
// payload, and Recoveries reads the recovery register. Package repair
// decides which steps and restart a standing service gets and asks a
// channel.Host for them; on this machine that Host is this package's.
//
// local imports channel (the Host interface and its types), units (the init
// system, unit files, port owners, the fixed PATH of step processes),
// catalog (repair steps and their payloads), register (the recovery
// register it reads), registry (the one declaration an ensure carries),
// refusal and svcproto (the service-protocol fingerprint verify reads). It
// must not import the write half, repair or cli: it is the far end of the
// channel, and knows nothing of registries or fleets beyond that one
// declaration.
//
// The release verbs act through release/hostend (the activation, its
// checks and proof) over package release's data, with this host's init
// system, /proc and serving read; Release supplies the release directory
// and the store.
package local

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/release/hostend"
	"github.com/wisent/stado/units"
)

// DefaultPoll is how often an ensure reads the unit while it confirms.
const DefaultPoll = 50 * time.Millisecond

// confirmLogLines is how many log lines an unconfirmed ensure returns.
const confirmLogLines = 10

// Host is this machine as a channel.Host. Every field but Manager has a
// usable zero value. It enforces what the channel grammar cannot know: a
// user-scope unit path lies below the login user's home, and a repair step
// receives only the environment names it declares.
type Host struct {
	// GOOS is the OS verbs are checked against; "" means runtime.GOOS.
	GOOS string
	// Home is the login user's home, which places user units.
	Home string
	// User is the login user's name, reported by version.
	User string
	// Node is the node id protocol operations get (OARBANK_NODE_ID); ""
	// means this machine's hostname.
	Node string
	// StadoVersion is this stado's version, reported by version.
	StadoVersion string
	// ProcRoot is /proc; tests point it at fixtures.
	ProcRoot string
	// Ports reads who listens on this host's TCP ports; nil means the
	// reader of the OS stado was built for (units.HostPortReader: /proc
	// and cgroups on linux, lsof and ps on darwin).
	Ports units.PortReader
	// Manager opens the init system's manager of a scope; the func it
	// returns closes it.
	Manager func(ctx context.Context, scope string) (units.Manager, func(), error)
	// DomainManager opens the manager of a user scope in a declared
	// launchd domain (ensure's LaunchdDomain); nil refuses such a request.
	DomainManager func(ctx context.Context, scope, domain string) (units.Manager, func(), error)
	// Catalog loads the catalog repair steps come from; nil means the
	// shipped one.
	Catalog func(ctx context.Context) (*catalog.Catalog, error)
	// RunStep runs a step the catalog holds (its payload argv, no shell),
	// normally a StepRunner's Run; New sets one. Nil refuses every step.
	RunStep func(ctx context.Context, cat *catalog.Catalog, step string, env map[string]string) channel.StepResult
	// Now and After are the clock of the confirm loop; nil means the real one.
	Now   func() time.Time
	After func(d time.Duration) <-chan time.Time
	// Poll is the interval of unit reads while an ensure confirms;
	// default DefaultPoll.
	Poll time.Duration
	// Release opens what the release verbs need beyond this host's init
	// system: a hostend.Host with the release directory, the store it reads
	// manifests and bytes from and the beacon proof of a stado activation;
	// the func it returns closes the store. Nil refuses the release verbs.
	Release func(ctx context.Context) (*hostend.Host, func(), error)

	keptMu sync.Mutex
	kept   map[string]keptManager // the managers a session holds, by scope (KeepForSession); nil outside one
}

var _ channel.Host = (*Host)(nil)

// New returns the Host of this machine with the real init system and the
// StepRunner of repair steps (HOME set to home).
func New(home, user, version string) *Host {
	h := &Host{Home: home, User: user, StadoVersion: version}
	h.RunStep = (&StepRunner{Home: home}).Run
	h.Manager = func(ctx context.Context, scope string) (units.Manager, func(), error) {
		return units.Open(ctx, h.OS(), scope, h.Home)
	}
	h.DomainManager = func(ctx context.Context, scope, domain string) (units.Manager, func(), error) {
		return units.OpenDomain(ctx, h.OS(), scope, domain, h.Home)
	}
	return h
}

// OS implements channel.Host.
func (h *Host) OS() string {
	if h.GOOS != "" {
		return h.GOOS
	}
	return runtime.GOOS
}

func (h *Host) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

func (h *Host) after(d time.Duration) <-chan time.Time {
	if h.After != nil {
		return h.After(d)
	}
	return time.After(d)
}

func (h *Host) nodeID() string {
	if h.Node != "" {
		return h.Node
	}
	name, _ := os.Hostname()
	return name
}

func (h *Host) ports() units.PortReader {
	if h.Ports != nil {
		return h.Ports
	}
	return units.HostPortReader(units.ExecRunner{}, h.procRoot())
}

func (h *Host) procRoot() string {
	if h.ProcRoot != "" {
		return h.ProcRoot
	}
	return "/proc"
}

// checkPath refuses a unit path outside the channel's unit directories, and
// a user-scope path outside the login user's home.
func (h *Host) checkPath(u channel.UnitRef, path string) error {
	if err := channel.CheckUnitPath(u.Scope, u.Unit, path); err != nil {
		return err
	}
	if u.Scope != channel.ScopeUser {
		return nil
	}
	home := filepath.Clean(h.Home)
	if home == "/" || home == "." || !strings.HasPrefix(filepath.Clean(path), home+"/") {
		return refusal.New(refusal.InvalidPath, "user unit path %s is not below the login user's home %s", path, h.Home)
	}
	return nil
}

// service is the declaration of a bare unit reference, with its path
// (the scope's directory when path is "").
func (h *Host) service(u channel.UnitRef, path string) (registry.Service, error) {
	s := registry.Service{Name: u.Unit, Unit: u.Unit, Scope: u.Scope, UnitPath: path}
	s.UnitPath = units.UnitPath(s, h.OS(), h.Home)
	return s, h.checkPath(u, s.UnitPath)
}

// withDomainManager is withManager in a declared launchd domain: a
// user-scope unit of a darwin host whose target declares one. Any other
// request, or no domain, is withManager.
func (h *Host) withDomainManager(ctx context.Context, scope, domain string, fn func(units.Manager) error) error {
	if domain == "" || scope != registry.ScopeUser {
		return h.withManager(ctx, scope, fn)
	}
	if h.DomainManager == nil {
		return refusal.New(refusal.NoManager, "this host has no manager of launchd domain %s wired", domain)
	}
	m, closeFn, err := h.DomainManager(ctx, scope, domain)
	if err != nil {
		return err
	}
	defer closeFn()
	return fn(m)
}

// checkDomain refuses a declared launchd domain on a host that is not
// darwin, or one outside the registry's grammar.
func (h *Host) checkDomain(domain string) error {
	switch {
	case domain == "":
		return nil
	case h.OS() != registry.OSDarwin:
		return refusal.New(refusal.InvalidScope, "launchd_domain %q is for a darwin host, and this host runs %s", domain, h.OS())
	case !registry.ValidLaunchdDomain(domain):
		return refusal.New(refusal.InvalidScope, "launchd_domain must be system, gui/<uid> or user/<uid>, got %q", domain)
	}
	return nil
}

func (h *Host) withManager(ctx context.Context, scope string, fn func(units.Manager) error) error {
	m, closeFn, err := h.openManager(ctx, scope)
	if err != nil {
		return err
	}
	defer closeFn()
	return fn(m)
}

// Version implements channel.Host.
func (h *Host) Version(context.Context) (channel.VersionResult, error) {
	return channel.VersionResult{Version: h.StadoVersion, Protocol: channel.ProtocolVersion, OS: h.OS(), Home: h.Home, User: h.User}, nil
}

// UnitInstall writes content as the unit file (atomically; equal bytes are
// left alone) and makes the init system read it. Content that is not a unit
// file of this OS is refused before anything is written.
func (h *Host) UnitInstall(ctx context.Context, req channel.InstallRequest) (units.InstallResult, error) {
	s, err := h.service(req.UnitRef, req.Path)
	if err != nil {
		return units.InstallResult{}, err
	}
	if units.IsPlist(req.Content) != (h.OS() == registry.OSDarwin) {
		return units.InstallResult{}, refusal.New(refusal.InvalidContent, "the content for %s is not a %s unit file", req.Unit, h.OS())
	}
	if _, err := units.ParseFile(s.UnitPath, req.Content, nil); err != nil {
		return units.InstallResult{}, refusal.New(refusal.InvalidContent, "the content for %s cannot be read as a unit: %v", req.Unit, err)
	}
	var res units.InstallResult
	err = h.withManager(ctx, req.Scope, func(m units.Manager) error {
		res, err = m.Install(ctx, s, req.Content)
		return err
	})
	return res, err
}

// UnitRemove stops and unloads the unit and deletes its file.
func (h *Host) UnitRemove(ctx context.Context, req channel.RemoveRequest) (channel.RemoveResult, error) {
	s, err := h.service(req.UnitRef, req.Path)
	if err != nil {
		return channel.RemoveResult{}, err
	}
	if err := h.checkDomain(req.Domain); err != nil {
		return channel.RemoveResult{}, err
	}
	_, statErr := os.Stat(s.UnitPath)
	err = h.withDomainManager(ctx, req.Scope, req.Domain, func(m units.Manager) error { return m.Remove(ctx, s) })
	if err != nil {
		return channel.RemoveResult{}, err
	}
	return channel.RemoveResult{Unit: req.Unit, Path: s.UnitPath, Removed: statErr == nil}, nil
}

// control runs op on a loaded unit and reports its verdict after, in the
// unit's declared launchd domain when it names one.
func (h *Host) control(ctx context.Context, u channel.UnitRef, op func(units.Manager) error) (units.Verdict, error) {
	var v units.Verdict
	if err := h.checkDomain(u.Domain); err != nil {
		return v, err
	}
	err := h.withDomainManager(ctx, u.Scope, u.Domain, func(m units.Manager) error {
		if err := op(m); err != nil {
			if v, serr := m.Show(ctx, u.Unit); serr == nil && v.State == units.StateMissing {
				return &units.NotLoadedError{Unit: u.Unit}
			}
			return err
		}
		var err error
		v, err = m.Show(ctx, u.Unit)
		return err
	})
	return v, err
}

// UnitStart implements channel.Host.
func (h *Host) UnitStart(ctx context.Context, u channel.UnitRef) (units.Verdict, error) {
	return h.control(ctx, u, func(m units.Manager) error { return m.Start(ctx, u.Unit) })
}

// UnitStop implements channel.Host.
func (h *Host) UnitStop(ctx context.Context, u channel.UnitRef) (units.Verdict, error) {
	return h.control(ctx, u, func(m units.Manager) error { return m.Stop(ctx, u.Unit) })
}

// UnitRestart restarts through the init system's own restart, which clears
// a failed state first.
func (h *Host) UnitRestart(ctx context.Context, u channel.UnitRef) (units.Verdict, error) {
	return h.control(ctx, u, func(m units.Manager) error { return m.Restart(ctx, u.Unit) })
}

// UnitShow reads verdicts, never files.
func (h *Host) UnitShow(ctx context.Context, req channel.ShowRequest) (channel.ShowResult, error) {
	var res channel.ShowResult
	err := h.withManager(ctx, req.Scope, func(m units.Manager) error {
		vs, err := m.ShowMany(ctx, req.Units)
		res.Units = vs
		return err
	})
	return res, err
}

// UnitFile reads a unit's verdict and the file it was loaded from.
func (h *Host) UnitFile(ctx context.Context, u channel.UnitRef) (channel.FileResult, error) {
	var res channel.FileResult
	err := h.withManager(ctx, u.Scope, func(m units.Manager) error {
		v, err := m.Show(ctx, u.Unit)
		if err != nil {
			return err
		}
		res.Verdict = v
		if v.State == units.StateMissing {
			return nil
		}
		res.File, err = units.ReadUnitFile(ctx, m, u.Unit, h.Home, h.now())
		return err
	})
	return res, err
}

// UnitLogs implements channel.Host; a unit the init system does not hold is
// refused with not_found.
func (h *Host) UnitLogs(ctx context.Context, req channel.LogsRequest) (channel.LogsResult, error) {
	res := channel.LogsResult{Unit: req.Unit, Lines: []string{}}
	err := h.withManager(ctx, req.Scope, func(m units.Manager) error {
		v, err := m.Show(ctx, req.Unit)
		if err != nil {
			return err
		}
		if v.State == units.StateMissing {
			return &units.NotLoadedError{Unit: req.Unit}
		}
		ls, err := m.Logs(ctx, req.Unit, req.Lines)
		if ls != nil {
			res.Lines = ls
		}
		return err
	})
	return res, err
}

// environmentReader is a Manager that can give the init system's own
// reading of a unit's environment (systemd).
type environmentReader interface {
	Environment(ctx context.Context, unit string) ([]string, error)
}

// UnitEnv reads the environment the unit's file and drop-ins give its
// program; for a systemd unit a declaration cannot represent, systemd's own
// reading of it.
func (h *Host) UnitEnv(ctx context.Context, u channel.UnitRef) (channel.EnvResult, error) {
	res := channel.EnvResult{Unit: u.Unit, Env: map[string]string{}, Source: "file"}
	err := h.withManager(ctx, u.Scope, func(m units.Manager) error {
		v, err := m.Show(ctx, u.Unit)
		if err != nil {
			return err
		}
		if v.State == units.StateMissing {
			return &units.NotLoadedError{Unit: u.Unit}
		}
		f, err := units.ReadUnitFile(ctx, m, u.Unit, h.Home, h.now())
		if err != nil {
			return err
		}
		if f == nil {
			return refusal.New(refusal.NotFound, "unit %s has no unit file", u.Unit)
		}
		res.Path = f.Path
		p, err := units.ParseFile(f.Path, []byte(f.Content), f.DropInBytes())
		if err != nil {
			return err
		}
		er, ok := m.(environmentReader)
		if p.Complete || !ok {
			for k, val := range p.Env { // the file's environment, complete or not
				res.Env[k] = val
			}
			return nil
		}
		words, err := er.Environment(ctx, u.Unit)
		if err != nil {
			return err
		}
		res.Source = "systemd"
		for _, w := range words {
			if k, val, ok := strings.Cut(w, "="); ok {
				res.Env[k] = val
			}
		}
		return nil
	})
	return res, err
}

// UnitList implements channel.Host.
func (h *Host) UnitList(ctx context.Context, scope string) (channel.ListResult, error) {
	res := channel.ListResult{Units: []string{}}
	err := h.withManager(ctx, scope, func(m units.Manager) error {
		names, err := m.ListLoaded(ctx)
		sort.Strings(names)
		if names != nil {
			res.Units = names
		}
		return err
	})
	return res, err
}

// PortOwner implements channel.Host; nothing listening is a not_found
// refusal.
func (h *Host) PortOwner(ctx context.Context, port int) (channel.PortOwnerResult, error) {
	ls, err := h.ports().PortOwners(ctx, port, units.Job{})
	if err != nil {
		return channel.PortOwnerResult{}, err
	}
	if len(ls) == 0 {
		return channel.PortOwnerResult{}, refusal.New(refusal.NotFound, "nothing listens on TCP port %d", port)
	}
	return channel.PortOwnerResult{Port: port, Listeners: ls}, nil
}

// RepairStep runs the catalog's payload for the step on this OS. A name the
// step does not declare is refused before anything runs; a payload that
// exits nonzero or overruns is a failure carrying its exit status and the
// tail of its output.
func (h *Host) RepairStep(ctx context.Context, req channel.StepRequest) (channel.StepResult, error) {
	var cat *catalog.Catalog
	if h.Catalog != nil {
		c, err := h.Catalog(ctx)
		if err != nil {
			return channel.StepResult{}, err
		}
		cat = c
	}
	cat = catalog.OrShipped(cat)
	st, ok := cat.Step(req.Step)
	if !ok {
		return channel.StepResult{}, refusal.New(refusal.NotFound, "the repair catalog has no step %s", req.Step)
	}
	env := map[string]string{}
	for _, e := range req.Env {
		if !contains(st.Needs, e.Name) {
			return channel.StepResult{}, refusal.New(refusal.InvalidEnv, "repair step %s does not take %s (it takes %s)", req.Step, e.Name, needsList(st.Needs))
		}
		env[e.Name] = e.Value
	}
	if h.RunStep == nil {
		return channel.StepResult{}, refusal.New(refusal.StepUnsupported, "this host runs no repair steps")
	}
	rep := h.RunStep(ctx, cat, req.Step, env)
	switch {
	case rep.OK, rep.Code == string(refusal.StepFailed), rep.Code == string(refusal.StepTimeout):
		// A payload that ran is evidence either way: its exit code and
		// output travel in the result.
		return rep, nil
	default:
		return channel.StepResult{}, refusal.New(refusal.Code(rep.Code), "%s", rep.Refusal)
	}
}

func needsList(needs []string) string {
	if len(needs) == 0 {
		return "no variables"
	}
	return strings.Join(needs, ", ")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
