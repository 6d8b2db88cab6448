package beacon

import (
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
	}{
		// an honest beacon, 10 s old, bound 45 s
		{"fresh", now.Add(-10 * time.Second), 45, 15, false, "", 0},
		// older than its bound
		{"old", now.Add(-time.Minute), 45, 15, true, "old, stale after", 0},
		// dated 2 minutes ahead: beyond the skew a reader allows
		{"two minutes ahead", now.Add(2 * time.Minute), 45, 15, true, "in the future", 120},
		// dated a year ahead
		{"a year ahead", now.AddDate(1, 0, 0), 45, 15, true, "in the future", now.AddDate(1, 0, 0).Sub(now).Seconds()},
		// a few seconds ahead is clock skew the reader tolerates, as age 0
		{"slight skew", now.Add(5 * time.Second), 45, 15, false, "", 5},
		// a bound of a year is capped: an hour-old beacon is stale
		{"enormous bound", now.Add(-time.Hour), 365 * 24 * 3600, 15, true, "stale after 10m0s", 0},
		// an enormous interval and no bound: capped too
		{"enormous interval", now.Add(-time.Hour), 0, 1e9, true, "stale after 10m0s", 0},
		// a bound that is not a finite duration is ignored: three intervals
		{"infinite bound", now.Add(-time.Hour), math.Inf(1), 15, true, "stale after 45s", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &View{Now: now, Beacons: map[string]*Beacon{"h": {At: tc.at, StaleAfterSeconds: tc.staleAfter, IntervalSeconds: tc.interval}}, Unreadable: map[string]string{}}
			f := v.Freshness("h")
			if f.Stale != tc.stale || !strings.Contains(f.Reason, tc.reason) || math.Abs(f.SkewSeconds-math.Round(tc.skew*10)/10) > 0.1 {
				t.Errorf("freshness %+v, want stale %v with %q and skew %.1f", f, tc.stale, tc.reason, tc.skew)
			}
			if f.AgeSeconds < 0 {
				t.Errorf("negative age %v", f.AgeSeconds)
			}
		})
	}
}
