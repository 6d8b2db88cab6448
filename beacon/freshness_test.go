package beacon

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// A beacon cannot make itself trusted: its date and its own bound are
// judged by the reader.
func TestStalenessIsJudgedByTheReaderNotByTheBeacon(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		at         time.Time
		staleAfter float64 // the beacon's own stale_after_seconds
		interval   float64
		stale      bool
		reason     string
		skew       float64
		kind       FreshnessKind
	}{
		// an honest beacon, 10 s old, bound 45 s
		{"fresh", now.Add(-10 * time.Second), 45, 15, false, "", 0, FreshnessFresh},
		// older than its bound
		{"old", now.Add(-time.Minute), 45, 15, true, "old, stale after", 0, FreshnessStale},
		// dated 2 minutes ahead: beyond the skew a reader allows
		{"two minutes ahead", now.Add(2 * time.Minute), 45, 15, true, "in the future", 120, FreshnessSkewed},
		// dated a year ahead
		{"a year ahead", now.AddDate(1, 0, 0), 45, 15, true, "in the future", now.AddDate(1, 0, 0).Sub(now).Seconds(), FreshnessSkewed},
		// a few seconds ahead is clock skew the reader tolerates, as age 0
		{"slight skew", now.Add(5 * time.Second), 45, 15, false, "", 5, FreshnessFresh},
		// a bound of a year is capped: an hour-old beacon is stale
		{"enormous bound", now.Add(-time.Hour), 365 * 24 * 3600, 15, true, "stale after 10m0s", 0, FreshnessStale},
		// an enormous interval and no bound: capped too
		{"enormous interval", now.Add(-time.Hour), 0, 1e9, true, "stale after 10m0s", 0, FreshnessStale},
		// a bound that is not a finite duration is ignored: three intervals
		{"infinite bound", now.Add(-time.Hour), math.Inf(1), 15, true, "stale after 45s", 0, FreshnessStale},
		// dated past what a Duration spans (about 292 years): still ahead,
		// never read as behind (the year 2318 is the first such date)
		{"year 2318", time.Date(2318, 12, 2, 12, 0, 0, 0, time.UTC), 45, 15, true, "in the future", time.Date(2318, 12, 2, 12, 0, 0, 0, time.UTC).Sub(now).Seconds(), FreshnessSkewed},
		{"year 2400", time.Date(2400, 1, 1, 0, 0, 0, 0, time.UTC), 45, 15, true, "in the future", math.MaxInt64 / 1e9, FreshnessSkewed},
		{"year 9999", time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), 1e300, 1e300, true, "in the future", math.MaxInt64 / 1e9, FreshnessSkewed},
		// dated centuries back: stale, its age as far as a Duration reaches
		{"year 1", time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), 45, 15, true, "old, stale after 45s", 0, FreshnessStale},
		// just inside the Duration's reach, ahead
		{"saturation boundary", now.Add(time.Duration(math.MaxInt64)), 45, 15, true, "in the future", math.MaxInt64 / 1e9, FreshnessSkewed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &View{Now: now, Beacons: map[string]*Beacon{"h": {At: tc.at, StaleAfterSeconds: tc.staleAfter, IntervalSeconds: tc.interval}}, Unreadable: map[string]string{}}
			f := v.Freshness("h")
			if f.Stale != tc.stale || !strings.Contains(f.Reason, tc.reason) || math.Abs(f.SkewSeconds-math.Round(tc.skew*10)/10) > 0.1 {
				t.Errorf("freshness %+v, want stale %v with %q and skew %.1f", f, tc.stale, tc.reason, tc.skew)
			}
			if f.Kind != tc.kind {
				t.Errorf("kind %v, want %v", f.Kind, tc.kind)
			}
			if f.AgeSeconds < 0 {
				t.Errorf("negative age %v", f.AgeSeconds)
			}
		})
	}
}

// Every verdict carries its kind, and the JSON form says it as before:
// present and stale, never a field of its own.
func TestFreshnessCarriesItsKindAndItsJSONIsUnchanged(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	v := &View{Now: now,
		Beacons: map[string]*Beacon{
			"fresh": {At: now.Add(-time.Second), StaleAfterSeconds: 45},
			"stale": {At: now.Add(-time.Minute), StaleAfterSeconds: 45},
			"ahead": {At: now.Add(time.Hour), StaleAfterSeconds: 45},
		},
		Unreadable: map[string]string{"broken": "unexpected end of JSON input"},
	}
	for _, tc := range []struct {
		host           string
		kind           FreshnessKind
		present, stale bool
	}{
		{"fresh", FreshnessFresh, true, false},      // within its bound
		{"stale", FreshnessStale, true, true},       // older than its bound
		{"ahead", FreshnessSkewed, true, true},      // dated beyond the allowed skew
		{"broken", FreshnessUnreadable, true, true}, // stored but not a beacon
		{"absent", FreshnessMissing, false, false},  // never published
	} {
		f := v.Freshness(tc.host)
		if f.Kind != tc.kind || f.Present != tc.present || f.Stale != tc.stale {
			t.Errorf("%s: kind %v present %v stale %v, want %v %v %v", tc.host, f.Kind, f.Present, f.Stale, tc.kind, tc.present, tc.stale)
		}
		b, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "kind") {
			t.Errorf("%s: JSON %s names the kind", tc.host, b)
		}
	}
	if (Freshness{}).Kind != FreshnessMissing {
		t.Error("the zero Freshness trusts something")
	}
}

// Whatever a beacon says of its date and bounds, and whatever the reader's
// clock and override, the verdict never trusts a beacon dated beyond the
// skew a reader allows or older than the bound in force.
func FuzzFreshnessIsJudgedWithoutOverflow(f *testing.F) {
	f.Add(int64(10976198400), int64(0), int64(1796212800), 45.0, 15.0, int64(0))      // year 2318
	f.Add(int64(253370764800), int64(0), int64(1796212800), 1e300, 1e300, int64(1e9)) // year 9999, a 1 s override
	f.Add(int64(-62135596800), int64(0), int64(1796212800), math.Inf(1), -1.0, int64(0))
	f.Add(int64(1796212790), int64(5), int64(1796212800), 45.0, 15.0, int64(0))
	f.Fuzz(func(t *testing.T, atSec, atNano, nowSec int64, staleAfter, interval float64, override int64) {
		at := time.Unix(atSec, atNano%1e9).UTC()
		now := time.Unix(nowSec, 0).UTC()
		v := &View{Now: now, StaleAfter: time.Duration(override), Unreadable: map[string]string{},
			Beacons: map[string]*Beacon{"h": {At: at, StaleAfterSeconds: staleAfter, IntervalSeconds: interval}}}
		fr := v.Freshness("h")
		ceiling := MaxStaleBound
		if override > 0 {
			ceiling = time.Duration(override)
		}
		ahead, behind := at.Sub(now), now.Sub(at)
		switch {
		case at.After(now) && ahead > MaxClockSkew && (fr.Kind != FreshnessSkewed || !fr.Stale):
			t.Fatalf("a beacon %s ahead read %v (%+v)", ahead, fr.Kind, fr)
		case !at.After(now) && behind > ceiling && (fr.Kind != FreshnessStale || !fr.Stale):
			t.Fatalf("a beacon %s old with the bound at most %s read %v (%+v)", behind, ceiling, fr.Kind, fr)
		case fr.Kind == FreshnessFresh && (fr.Stale || ahead > MaxClockSkew || behind > ceiling):
			t.Fatalf("read fresh: %+v (ahead %s, behind %s)", fr, ahead, behind)
		case fr.AgeSeconds < 0 || fr.SkewSeconds < 0:
			t.Fatalf("negative age or skew: %+v", fr)
		}
	})
}
