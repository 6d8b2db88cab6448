package beacon

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/store"
)

func TestPublishedVersionNeedsABeaconPublishedSinceTheRestart(t *testing.T) {
	ctx := context.Background()
	st, err := store.OpenFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	restart := time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC)
	if _, err := PublishedVersion(ctx, st, "host2", restart); err == nil {
		t.Fatal("no beacon at all proved a version")
	}
	put := func(at time.Time, version string) {
		b, err := json.Marshal(Beacon{Kind: Kind, Version: FormatVersion, Host: "host2", At: at, StadoVersion: version, Units: []UnitReport{}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Put(ctx, store.BeaconPrefix+"host2", b, store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	put(restart.Add(-time.Second), "1.0.0")
	if _, err := PublishedVersion(ctx, st, "host2", restart); err == nil || !strings.Contains(err.Error(), "before") {
		t.Fatalf("a beacon from before the restart: %v, want an error saying so", err)
	}
	put(restart.Add(time.Second), "1.1.0")
	if v, err := PublishedVersion(ctx, st, "host2", restart); err != nil || v != "1.1.0" {
		t.Fatalf("version %q %v, want 1.1.0", v, err)
	}
}
