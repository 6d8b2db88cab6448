package local

import (
	"context"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/units"
)

// connected is a manager that holds a connection to its init system
// (units.Systemd's D-Bus connection) and says whether it still stands.
type connected interface {
	Connected() bool
}

// keptManager is a manager a session holds open, and the func that closes it.
type keptManager struct {
	m     units.Manager
	close func()
}

var _ channel.SessionKeeper = (*Host)(nil)

// KeepForSession makes h hold the managers its calls open, one per scope,
// until the returned func closes them. Opening the systemd manager dials
// and authenticates two D-Bus connections, which cost the host more than
// the call that needs them; a session's calls share them instead. Only a
// manager that holds a connection is kept (launchd's runs launchctl per
// call and holds nothing), and one whose connection dropped is closed and
// opened again by the next call that needs it.
func (h *Host) KeepForSession() (release func()) {
	h.keptMu.Lock()
	h.kept = map[string]keptManager{}
	h.keptMu.Unlock()
	return func() {
		h.keptMu.Lock()
		defer h.keptMu.Unlock()
		for _, km := range h.kept {
			km.close()
		}
		h.kept = nil
	}
}

// openManager opens the manager of scope with h.Manager, or returns the
// one the session keeps; the func it returns closes a manager that is not
// kept and does nothing for one that is.
func (h *Host) openManager(ctx context.Context, scope string) (units.Manager, func(), error) {
	if h.Manager == nil {
		return nil, nil, refusal.New(refusal.NoManager, "this host has no %s manager wired", scope)
	}
	h.keptMu.Lock()
	if h.kept == nil { // not in a session: calls open their own, at once
		h.keptMu.Unlock()
		return h.Manager(ctx, scope)
	}
	defer h.keptMu.Unlock()
	if km, ok := h.kept[scope]; ok {
		if c, ok := km.m.(connected); ok && c.Connected() {
			return km.m, func() {}, nil
		}
		km.close()
		delete(h.kept, scope)
	}
	m, closeFn, err := h.Manager(ctx, scope)
	if err != nil {
		return nil, nil, err
	}
	if _, ok := m.(connected); !ok {
		return m, closeFn, nil
	}
	h.kept[scope] = keptManager{m: m, close: closeFn}
	return m, func() {}, nil
}
