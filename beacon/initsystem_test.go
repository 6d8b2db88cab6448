package beacon

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
	"github.com/wisent/stado/units"
	"github.com/wisent/stado/units/unitstest"
)

// TestAHostWithNoInitSystemKeepsPublishingBeaconsWithUnitsUnreadable: when
// the init system cannot be reached (no system bus), each pass still
// publishes this host's beacon, carrying a units_unreadable refusal, and the
// first pass after it comes back reads the units again.
func TestAHostWithNoInitSystemKeepsPublishingBeaconsWithUnitsUnreadable(t *testing.T) {
	ctx := context.Background()
	noBus := errors.New("dial unix /run/dbus/system_bus_socket: connect: no such file or directory")
	sys := unitstest.NewMemory("/root")
	started(t, sys, "db.service")
	var up bool
	opens := 0
	mgr, dirs := OpenInitSystem(ctx, func(context.Context, string) (units.Manager, []string, func(), error) {
		opens++
		if !up {
			return nil, []string{"/etc/systemd/system"}, nil, noBus
		}
		return sys, []string{"/etc/systemd/system"}, func() {}, nil
	}, "/root")
	defer mgr.Close()
	if len(dirs) != 1 {
		t.Fatalf("dirs %v, want the directories even when the manager did not open", dirs)
	}
	st := newStore(t)
	if _, err := registry.Push(ctx, st, userFleet(""), 0, "test"); err != nil {
		t.Fatal(err)
	}
	r := &Runner{Host: "host1", Store: st, Observer: &UnitsObserver{Manager: mgr}, Config: Config{Interval: time.Second}}
	for pass := 1; pass <= 2; pass++ {
		b, err := r.RunPass(ctx)
		if err != nil {
			t.Fatalf("pass %d: %v", pass, err)
		}
		if !hasRefusal(b, "units_unreadable") {
			t.Fatalf("pass %d refusals %+v, want units_unreadable", pass, b.Refusals)
		}
		if _, err := st.Get(ctx, store.BeaconPrefix+"host1"); err != nil {
			t.Fatalf("pass %d published no beacon: %v", pass, err)
		}
	}
	up = true
	b, err := r.RunPass(ctx)
	if err != nil || hasRefusal(b, "units_unreadable") || len(b.Units) == 0 || b.Units[0].State != StateActive {
		t.Fatalf("after the init system came back: %v %+v %+v", err, b.Refusals, b.Units)
	}
	if opens < 3 {
		t.Errorf("opened %d times, want a retry on each pass until it opens", opens)
	}
}

func hasRefusal(b *Beacon, code string) bool {
	for _, r := range b.Refusals {
		if r.Code == code {
			return true
		}
	}
	return false
}
