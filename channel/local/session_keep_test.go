package local_test

import (
	"context"
	"errors"
	"testing"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/channel/local"
	"github.com/wisent/stado/units"
	"github.com/wisent/stado/units/unitstest"
)

// connManager is an in-memory manager that holds a connection, as
// units.Systemd holds its D-Bus connection: Connected says whether it
// still stands, and closing it is counted.
type connManager struct {
	*unitstest.Memory
	scope  string
	down   bool
	closed int
}

func (m *connManager) Connected() bool { return !m.down }

// opener counts the managers a Host opens, by scope, and keeps them.
type opener struct {
	mem    *unitstest.Memory
	opened []*connManager
	plain  bool  // open managers that hold no connection (no Connected)
	fail   error // returned by the next open, once
}

func (o *opener) open(_ context.Context, scope string) (units.Manager, func(), error) {
	if err := o.fail; err != nil {
		o.fail = nil
		return nil, nil, err
	}
	m := &connManager{Memory: o.mem, scope: scope}
	o.opened = append(o.opened, m)
	if o.plain {
		return o.mem, func() { m.closed++ }, nil
	}
	return m, func() { m.closed++ }, nil
}

func (o *opener) count(scope string) (opened, closed int) {
	for _, m := range o.opened {
		if m.scope == scope {
			opened++
			closed += m.closed
		}
	}
	return opened, closed
}

func restartIn(t *testing.T, h *local.Host, scope string) {
	t.Helper()
	if _, err := h.UnitRestart(context.Background(), channel.UnitRef{Scope: scope, Unit: "a.service"}); err != nil {
		t.Fatalf("restart in %s: %v", scope, err)
	}
}

func keepingHost(t *testing.T) (*local.Host, *opener) {
	home := t.TempDir()
	mem := unitstest.NewMemory(home)
	mem.Load("a.service", "/etc/systemd/system/a.service", unitstest.Runs)
	o := &opener{mem: mem}
	return &local.Host{GOOS: "linux", Home: home, Manager: o.open}, o
}

func TestASessionsCallsShareOneManagerPerScopeAndItsEndClosesThem(t *testing.T) {
	h, o := keepingHost(t)
	// outside a session every call opens and closes its own
	restartIn(t, h, "system")
	restartIn(t, h, "system")
	if opened, closed := o.count("system"); opened != 2 || closed != 2 {
		t.Fatalf("outside a session: %d opened, %d closed; want 2 and 2", opened, closed)
	}

	o.opened = nil
	release := h.KeepForSession()
	restartIn(t, h, "system")
	restartIn(t, h, "user")
	restartIn(t, h, "system")
	restartIn(t, h, "user")
	for _, scope := range []string{"system", "user"} {
		if opened, closed := o.count(scope); opened != 1 || closed != 0 {
			t.Errorf("%s during the session: %d opened, %d closed; want 1 and 0", scope, opened, closed)
		}
	}
	release()
	for _, scope := range []string{"system", "user"} {
		if opened, closed := o.count(scope); opened != 1 || closed != 1 {
			t.Errorf("%s after the session: %d opened, %d closed; want 1 and 1", scope, opened, closed)
		}
	}
	// after the session, calls open their own again
	restartIn(t, h, "system")
	if opened, closed := o.count("system"); opened != 2 || closed != 2 {
		t.Errorf("after the session: %d opened, %d closed; want 2 and 2", opened, closed)
	}
}

func TestAKeptManagerWhoseConnectionDroppedIsOpenedAgain(t *testing.T) {
	h, o := keepingHost(t)
	release := h.KeepForSession()
	defer release()
	restartIn(t, h, "system")
	o.opened[0].down = true // the bus went away between two calls
	restartIn(t, h, "system")
	if len(o.opened) != 2 || o.opened[0].closed != 1 || o.opened[1].closed != 0 {
		t.Fatalf("after a drop: %d opened, the dropped one closed %d times; want a second open and the first closed", len(o.opened), o.opened[0].closed)
	}
	restartIn(t, h, "system")
	if len(o.opened) != 2 {
		t.Errorf("the reopened manager was not kept: %d opened", len(o.opened))
	}
}

func TestASessionKeepsNoManagerThatHoldsNoConnectionNorAFailedOpen(t *testing.T) {
	h, o := keepingHost(t)
	release := h.KeepForSession()
	defer release()

	o.fail = errors.New("no bus")
	if _, err := h.UnitRestart(context.Background(), channel.UnitRef{Scope: "system", Unit: "a.service"}); err == nil {
		t.Fatal("a failed open did not fail the call")
	}
	restartIn(t, h, "system") // the next call opens again
	if len(o.opened) != 1 {
		t.Fatalf("after a failed open: %d opened, want 1", len(o.opened))
	}

	// launchd's manager runs launchctl for every call and holds nothing:
	// it is opened and closed per call even in a session
	o.plain = true
	restartIn(t, h, "user")
	restartIn(t, h, "user")
	if opened, closed := o.count("user"); opened != 2 || closed != 2 {
		t.Errorf("a manager without a connection: %d opened, %d closed; want 2 and 2", opened, closed)
	}
}
