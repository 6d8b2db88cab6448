package beacon

import (
	"math"
	"testing"
	"time"

	"github.com/wisent/stado/registry"
)

// FuzzBeaconDecodingAndStaleness feeds arbitrary stored bytes and reader
// clocks to the read half: decoding never panics, and whatever a beacon
// claims, the reader's judgement holds: a trusted beacon is no older than
// the reader's cap and dated no further ahead than the skew it allows,
// ages are never negative or NaN, a distrusted beacon says why, and every
// row reads a verdict the reader defines.
func FuzzBeaconDecodingAndStaleness(f *testing.F) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for _, seed := range []string{
		`{"kind":"stado.beacon","version":1,"host":"h","at":"2026-12-02T11:59:50Z","interval_seconds":15,"stale_after_seconds":45,"units":[{"service":"a","unit":"a.service","state":"active"}]}`,
		`{"kind":"stado.beacon","version":1,"host":"h","at":"2027-12-02T11:59:50Z","interval_seconds":15,"stale_after_seconds":1e300,"units":[{"service":"a","unit":"a.service","state":"active"}]}`,
		`{"kind":"stado.beacon","version":1,"host":"h","at":"2026-12-02T11:00:00Z","interval_seconds":1e308,"stale_after_seconds":-1,"units":[{"service":"a","unit":"a.service","state":"weird"}]}`,
		`{"kind":"stado.beacon","version":1,"host":"other","at":"2026-12-02T12:00:00Z"}`,
		`{"kind":"stado.beacon","version":1,"host":"h","at":"0001-01-01T00:00:00Z","undeclared":[{"unit":"x\u001b[2J.service","state":""}]}`,
		`{"kind":"stado.beacon","version":1,"host":"h","at":"2026-12-02T11:59:50Z","releases":{"state":"read","products":[{"product":"brama","active":{"version":"1.4.3","sha256":"aa"}}]}}`,
		`{"kind":"stado.beacon","version":2}`,
		`not json`,
	} {
		f.Add([]byte(seed), int64(0), int64(0))
	}
	doc := &registry.Document{Version: 1, Targets: []registry.Target{{Name: "h", OS: "linux", Services: []registry.Service{{Name: "a", Unit: "a.service", Program: "/bin/a"}}}}}
	f.Fuzz(func(t *testing.T, data []byte, shift int64, staleAfter int64) {
		v := &View{Document: doc, Beacons: map[string]*Beacon{}, Unreadable: map[string]string{}, Now: now.Add(time.Duration(shift)), StaleAfter: time.Duration(staleAfter)}
		b, err := DecodeBeacon("h", data)
		if err != nil {
			v.Unreadable["h"] = err.Error()
		} else {
			v.Beacons["h"] = b
		}
		fr := v.Freshness("h")
		for _, x := range []float64{fr.AgeSeconds, fr.SkewSeconds, fr.StaleAfterSeconds} {
			if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
				t.Fatalf("freshness %+v carries a negative or non-finite figure", fr)
			}
		}
		if fr.Stale && fr.Reason == "" {
			t.Fatalf("stale without a reason: %+v", fr)
		}
		if !fr.Stale && fr.Present {
			bound := MaxStaleBound
			if v.StaleAfter > 0 {
				bound = v.StaleAfter
			}
			if fr.AgeSeconds > bound.Seconds()+0.1 {
				t.Fatalf("trusted at age %vs beyond the reader's bound %v", fr.AgeSeconds, bound)
			}
			if fr.SkewSeconds > MaxClockSkew.Seconds()+0.1 {
				t.Fatalf("trusted although dated %vs ahead", fr.SkewSeconds)
			}
		}
		for _, r := range append(v.Rows(""), v.Undeclared("")...) {
			if !knownState(r.State) && r.State != StateUnknown {
				t.Fatalf("row reads state %q", r.State)
			}
			if r.State == StateUnknown && r.Beacon.Reason == "" && r.Sentence == "" {
				t.Fatalf("row reads unknown without a reason: %+v", r)
			}
		}
		_ = v.Health("")
		_ = v.Doctor()
	})
}
