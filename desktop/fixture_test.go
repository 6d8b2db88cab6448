package desktop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

// fleetFixture writes a registry of hosts × services (unit sN.service on
// hostNNNN, env carrying a secret) and one fresh beacon per host at now to
// a file store. Every unit is active; answering and failures are added by
// the caller through edit, which sees each beacon before it is stored.
func fleetFixture(tb testing.TB, hosts, services int, now time.Time, edit func(b *beacon.Beacon)) store.Store {
	tb.Helper()
	st, err := store.OpenFileStore(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	doc := &registry.Document{Version: 1}
	for h := range hosts {
		t := registry.Target{Name: hostName(h), SSH: registry.SSH{Address: fmt.Sprintf("127.0.2.%d", h%250+1), Port: 22, User: "root"}, OS: "linux"}
		for s := range services {
			t.Services = append(t.Services, registry.Service{Name: fmt.Sprintf("s%d", s), Unit: fmt.Sprintf("s%d.service", s),
				Program: "/usr/bin/sleep", Args: []string{"infinity", "--token", "hunter2-arg"}, SecretArgs: []int{2},
				Env: map[string]string{"API_TOKEN": "hunter2-secret"}})
		}
		doc.Targets = append(doc.Targets, t)
	}
	if _, err := registry.Push(ctx, st, doc, 0, "desktop fixture"); err != nil {
		tb.Fatal(err)
	}
	for h := range hosts {
		b := &beacon.Beacon{Kind: beacon.Kind, Version: beacon.FormatVersion, Host: hostName(h), Pass: 7, At: now.Add(-2 * time.Second),
			IntervalSeconds: 5, StaleAfterSeconds: 15}
		for s := range services {
			b.Units = append(b.Units, beacon.UnitReport{Service: fmt.Sprintf("s%d", s), Unit: fmt.Sprintf("s%d.service", s), State: beacon.StateActive, PID: 1000 + s})
		}
		if edit != nil {
			edit(b)
		}
		data, err := json.Marshal(b)
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := st.Put(ctx, store.BeaconPrefix+b.Host, data, store.PutOptions{}); err != nil {
			tb.Fatal(err)
		}
	}
	return st
}

func hostName(i int) string { return fmt.Sprintf("host%04d", i) }
