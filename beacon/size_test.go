package beacon

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

// sizedBeacon is a beacon of host whose encoding is about size bytes.
func sizedBeacon(t *testing.T, host string, at time.Time, size int) []byte {
	t.Helper()
	b := Beacon{Kind: Kind, Version: FormatVersion, Host: host, At: at, IntervalSeconds: 15, StaleAfterSeconds: 45,
		Units: []UnitReport{{Service: "api", Unit: "api.service", State: StateActive}}}
	base, _ := json.Marshal(b)
	b.Units[0].Sentence = strings.Repeat("x", size-len(base)-len(`,"sentence":""`))
	data, _ := json.Marshal(b)
	if len(data) != size {
		t.Fatalf("fixture beacon is %d bytes, want %d", len(data), size)
	}
	return data
}

// A beacon at the limit is read; one a byte past it is never decoded (on
// the file store never read): its host reads unreadable, naming the limit,
// and the other hosts' rows are untouched.
func TestABeaconPastTheLimitReadsUnreadableAndOneAtItIsRead(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	st, err := store.OpenFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	doc, err := registry.Parse([]byte(`version: 1
targets:
  - {name: at, os: linux, ssh: {address: 127.0.0.1}, services: [{name: api, unit: api.service, program: /bin/true}]}
  - {name: over, os: linux, ssh: {address: 127.0.0.1}, services: [{name: api, unit: api.service, program: /bin/true}]}
`), "fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := registry.Push(ctx, st, doc, 0, "test"); err != nil {
		t.Fatal(err)
	}
	for host, size := range map[string]int{"at": MaxBytes, "over": MaxBytes + 1} {
		if _, err := st.Put(ctx, store.BeaconPrefix+host, sizedBeacon(t, host, now, size), store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, sel := range []Selection{{}, {Host: "over"}} {
		v, err := LoadSelected(ctx, st, now, 0, sel)
		if err != nil {
			t.Fatal(err)
		}
		f := v.Freshness("over")
		if f.Kind != FreshnessUnreadable || !strings.Contains(f.Reason, "limit") {
			t.Errorf("selection %+v: the oversized beacon reads %v %q, want unreadable naming the limit", sel, f.Kind, f.Reason)
		}
		if sel.Host == "" {
			if f := v.Freshness("at"); f.Kind != FreshnessFresh {
				t.Errorf("the beacon at the limit reads %v %q", f.Kind, f.Reason)
			}
		}
	}
	if _, err := DecodeBeacon("over", sizedBeacon(t, "over", now, MaxBytes+1)); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("DecodeBeacon of an oversized beacon: %v", err)
	}
}

// A pass whose beacon would pass the limit publishes its header and a
// refusal saying why its reports are missing, within the limit.
func TestAPassOverTheLimitPublishesWhyInsteadOfItsReports(t *testing.T) {
	ctx := context.Background()
	st, err := store.OpenFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{Host: "h1", Store: st}
	b := &Beacon{Kind: Kind, Version: FormatVersion, Host: "h1", Pass: 7, At: time.Now().UTC(), IntervalSeconds: 15,
		Units: []UnitReport{{Service: "api", Unit: "api.service", State: StateActive, LastStderr: strings.Repeat("y", MaxBytes)}}}
	if slimmed, err := r.publish(ctx, b, Config{}); err != nil || !slimmed {
		t.Fatal(err)
	}
	o, err := st.Get(ctx, store.BeaconPrefix+"h1")
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Value) > MaxBytes {
		t.Fatalf("published %d bytes, over the limit", len(o.Value))
	}
	got, err := DecodeBeacon("h1", o.Value)
	if err != nil {
		t.Fatal(err)
	}
	if got.Pass != 7 || len(got.Units) != 0 || len(got.Refusals) != 1 || got.Refusals[0].Code != CodeBeaconTooLarge {
		t.Fatalf("published %+v", got)
	}
}
