package beacon

import (
	"context"
	"fmt"
	"sync"

	"github.com/wisent/stado/declaration"
	"github.com/wisent/stado/units"
)

// OpenManager opens a host's init system for the login user's home
// (units.OpenHostManager: the manager, its administrator unit directories,
// a close func).
type OpenManager func(ctx context.Context, home string) (units.Manager, []string, func(), error)

// InitSystem is the host process's units.Manager when the init system may
// be out of reach (no system bus yet, a D-Bus that refuses): every call
// opens it first if it is not open, and while that fails returns the
// failure, so each pass publishes a beacon carrying a units_unreadable
// refusal instead of the process stopping, and the first call after the
// init system comes back uses it. Safe for concurrent use.
type InitSystem struct {
	open    OpenManager
	home    string
	mu      sync.Mutex
	m       units.Manager
	closeFn func()
}

var _ units.Manager = (*InitSystem)(nil)

// OpenInitSystem tries open once, now, and returns the InitSystem holding
// its manager (or retrying it on use) together with the unit directories
// open named, which it names whether or not the manager opened. It never
// fails: a failure to open is each later call's error.
func OpenInitSystem(ctx context.Context, open OpenManager, home string) (*InitSystem, []string) {
	s := &InitSystem{open: open, home: home}
	m, dirs, closeFn, err := open(ctx, home)
	if err == nil {
		s.m, s.closeFn = m, closeFn
	}
	return s, dirs
}

// manager is the open manager, opening it when it is not.
func (s *InitSystem) manager(ctx context.Context) (units.Manager, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m != nil {
		return s.m, nil
	}
	m, _, closeFn, err := s.open(ctx, s.home)
	if err != nil {
		return nil, fmt.Errorf("reach the init system: %w", err)
	}
	s.m, s.closeFn = m, closeFn
	return m, nil
}

// Close closes the manager if it was opened.
func (s *InitSystem) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closeFn != nil {
		s.closeFn()
	}
	s.m, s.closeFn = nil, nil
}

// Install implements units.Manager.
func (s *InitSystem) Install(ctx context.Context, d declaration.Service, content []byte) (units.InstallResult, error) {
	m, err := s.manager(ctx)
	if err != nil {
		return units.InstallResult{}, err
	}
	return m.Install(ctx, d, content)
}

// Remove implements units.Manager.
func (s *InitSystem) Remove(ctx context.Context, d declaration.Service) error {
	m, err := s.manager(ctx)
	if err != nil {
		return err
	}
	return m.Remove(ctx, d)
}

// Start implements units.Manager.
func (s *InitSystem) Start(ctx context.Context, unit string) error {
	m, err := s.manager(ctx)
	if err != nil {
		return err
	}
	return m.Start(ctx, unit)
}

// Stop implements units.Manager.
func (s *InitSystem) Stop(ctx context.Context, unit string) error {
	m, err := s.manager(ctx)
	if err != nil {
		return err
	}
	return m.Stop(ctx, unit)
}

// Restart implements units.Manager.
func (s *InitSystem) Restart(ctx context.Context, unit string) error {
	m, err := s.manager(ctx)
	if err != nil {
		return err
	}
	return m.Restart(ctx, unit)
}

// Show implements units.Manager.
func (s *InitSystem) Show(ctx context.Context, unit string) (units.Verdict, error) {
	m, err := s.manager(ctx)
	if err != nil {
		return units.Verdict{}, err
	}
	return m.Show(ctx, unit)
}

// ShowMany implements units.Manager.
func (s *InitSystem) ShowMany(ctx context.Context, names []string) ([]units.Verdict, error) {
	m, err := s.manager(ctx)
	if err != nil {
		return nil, err
	}
	return m.ShowMany(ctx, names)
}

// Logs implements units.Manager.
func (s *InitSystem) Logs(ctx context.Context, unit string, lines int) ([]string, error) {
	m, err := s.manager(ctx)
	if err != nil {
		return nil, err
	}
	return m.Logs(ctx, unit, lines)
}

var _ units.LoadedAmongLister = (*InitSystem)(nil)

// ListLoadedAmong implements units.LoadedAmongLister: the manager's own
// when it has one, else its whole listing kept to names.
func (s *InitSystem) ListLoadedAmong(ctx context.Context, names []string) ([]string, error) {
	m, err := s.manager(ctx)
	if err != nil {
		return nil, err
	}
	return units.LoadedAmong(ctx, m, names)
}

// ListLoaded implements units.Manager.
func (s *InitSystem) ListLoaded(ctx context.Context) ([]string, error) {
	m, err := s.manager(ctx)
	if err != nil {
		return nil, err
	}
	return m.ListLoaded(ctx)
}
