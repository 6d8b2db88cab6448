// Package unitstest holds an in-memory units.Manager for tests that cannot
// run an init system (no root, no systemd as PID 1). It writes unit files
// for real, so the code under test reads and compares real bytes; the
// journeys under tests/ prove the same paths on a real systemd. It imports
// units (the Manager it implements) and registry (the scopes of its units).
package unitstest

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/units"
)

// Behaviour is how a unit's program behaves when started.
type Behaviour int

const (
	// Runs keeps a process with one pid.
	Runs Behaviour = iota
	// ExitsAfterStart exits 1 at once, and its supervisor keeps starting it.
	ExitsAfterStart
)

// Memory is a units.Manager over a map. Units are loaded by Install (or
// Load) and forgotten by Remove. It counts the calls that change a host.
type Memory struct {
	GOOS string // "linux" unless set
	Home string

	mu      sync.Mutex
	units   map[string]*memUnit
	nextPID int
	// Calls counts Install, Start, Stop, Restart and Remove by name.
	Calls map[string]int
}

type memUnit struct {
	path      string
	behaviour Behaviour
	verdict   units.Verdict
}

var _ units.Manager = (*Memory)(nil)
var _ units.FileLocator = (*Memory)(nil)
var _ units.Reloader = (*Memory)(nil)

// NewMemory returns an empty Memory whose user units live below home.
func NewMemory(home string) *Memory {
	return &Memory{Home: home, units: map[string]*memUnit{}, nextPID: 1000, Calls: map[string]int{}}
}

// Load makes unit loaded with behaviour, as if its file had been installed
// at path, stopped.
func (m *Memory) Load(unit, path string, b Behaviour) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.units[unit] = &memUnit{path: path, behaviour: b, verdict: units.Verdict{Unit: unit, State: units.StateInactive}}
}

// SetBehaviour changes how unit behaves on its next start.
func (m *Memory) SetBehaviour(unit string, b Behaviour) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if u, ok := m.units[unit]; ok {
		u.behaviour = b
	}
}

func (m *Memory) goos() string {
	if m.GOOS == "" {
		return registry.OSLinux
	}
	return m.GOOS
}

// Install writes content to s's path when it differs and loads the unit.
func (m *Memory) Install(_ context.Context, s registry.Service, content []byte) (units.InstallResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.Calls["Install"]++
	path := units.UnitPath(s, m.goos(), m.Home)
	res := units.InstallResult{Path: path, Action: units.ActionInstalled}
	old, err := os.ReadFile(path)
	switch {
	case err == nil && bytes.Equal(old, content):
		res.Action = units.ActionUnchanged
	case err == nil:
		res.Action = units.ActionUpdated
	case !errors.Is(err, fs.ErrNotExist):
		return res, err
	}
	if res.Action != units.ActionUnchanged {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return res, err
		}
		if err := os.WriteFile(path, content, 0o644); err != nil {
			return res, err
		}
	}
	if _, ok := m.units[s.Unit]; !ok {
		m.units[s.Unit] = &memUnit{verdict: units.Verdict{Unit: s.Unit, State: units.StateInactive}}
	}
	m.units[s.Unit].path = path
	return res, nil
}

// Remove stops and forgets the unit and deletes its file.
func (m *Memory) Remove(_ context.Context, s registry.Service) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.Calls["Remove"]++
	delete(m.units, s.Unit)
	err := os.Remove(units.UnitPath(s, m.goos(), m.Home))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

func (m *Memory) start(unit string) error {
	u, ok := m.units[unit]
	if !ok {
		return &units.NotLoadedError{Unit: unit}
	}
	switch u.behaviour {
	case ExitsAfterStart:
		u.verdict = units.Verdict{Unit: unit, State: units.StateFailing, LastExit: 1, Starts: u.verdict.Starts + 3}
		u.verdict.Sentence = units.FailingSentence(unit, "1", u.verdict.Starts)
	default:
		m.nextPID++
		u.verdict = units.Verdict{Unit: unit, State: units.StateActive, PID: m.nextPID}
	}
	return nil
}

// Start starts a loaded unit.
func (m *Memory) Start(_ context.Context, unit string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.Calls["Start"]++
	return m.start(unit)
}

// Restart restarts a loaded unit with a new pid.
func (m *Memory) Restart(_ context.Context, unit string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.Calls["Restart"]++
	return m.start(unit)
}

// Stop stops a loaded unit.
func (m *Memory) Stop(_ context.Context, unit string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.Calls["Stop"]++
	u, ok := m.units[unit]
	if !ok {
		return &units.NotLoadedError{Unit: unit}
	}
	u.verdict = units.Verdict{Unit: unit, State: units.StateInactive}
	return nil
}

// Show reads a unit's verdict; an unknown unit is missing.
func (m *Memory) Show(_ context.Context, unit string) (units.Verdict, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if u, ok := m.units[unit]; ok {
		return u.verdict, nil
	}
	return units.Verdict{Unit: unit, State: units.StateMissing}, nil
}

// ShowMany reads verdicts in order.
func (m *Memory) ShowMany(ctx context.Context, names []string) ([]units.Verdict, error) {
	out := make([]units.Verdict, len(names))
	for i, n := range names {
		out[i], _ = m.Show(ctx, n)
	}
	return out, nil
}

// Logs returns one line naming the unit's state.
func (m *Memory) Logs(_ context.Context, unit string, _ int) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if u, ok := m.units[unit]; ok && u.behaviour == ExitsAfterStart {
		return []string{unit + ": fatal: cannot open config"}, nil
	}
	return []string{}, nil
}

// ListLoaded names the loaded units, sorted.
func (m *Memory) ListLoaded(context.Context) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var names []string
	for n := range m.units {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// UnitFiles implements units.FileLocator. A loaded unit's drop-ins are
// the *.conf files of the directory beside its file (PATH.d), in name
// order, as systemd reads that one directory.
func (m *Memory) UnitFiles(_ context.Context, unit string) (string, []string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	u, ok := m.units[unit]
	if !ok {
		return "", nil, nil
	}
	dropins, err := filepath.Glob(filepath.Join(u.path+".d", "*.conf"))
	if err != nil {
		return "", nil, err
	}
	sort.Strings(dropins)
	return u.path, dropins, nil
}

// Reload implements units.Reloader; it counts the call.
func (m *Memory) Reload(context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.Calls["Reload"]++
	return nil
}
