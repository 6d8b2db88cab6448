package rollout

import (
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/release"
)

// Each outcome prints as one line naming host, product and the versions,
// with the evidence or the refusal and its code.
func TestLinesSayWhatLanded(t *testing.T) {
	for _, tc := range []struct {
		l    Line
		want string
	}{
		{Line{Host: "h1", Product: "brama", Canary: true, Outcome: release.OutcomeActivated, From: "1.0", To: "2.0", PID: 11, Evidence: "runs /x"}, "h1 brama: (canary) activated 1.0 → 2.0, pid 11 (runs /x)"},
		{Line{Host: "h2", Product: "brama", Outcome: release.OutcomeUnchanged, From: "2.0", To: "2.0"}, "h2 brama: unchanged, 2.0 active"},
		{Line{Host: "h2", Product: "brama", Outcome: release.OutcomeWouldActivate, From: "1.0", To: "2.0"}, "h2 brama: would activate 2.0, now 1.0"},
		{Line{Host: "h3", Product: "brama", Outcome: release.OutcomeRestored, From: "2.0", To: "3.0", Code: "release_not_proven", Refusal: "no fresh pid", Evidence: "restored 2.0: runs /y", PID: 7},
			"h3 brama: restored 2.0 → 3.0 [release_not_proven]: no fresh pid; restored 2.0: runs /y, pid 7"},
		{Line{Host: "h5", Product: "brama", Outcome: OutcomeRefused, To: "3.0", Code: "release_downgrade", Refusal: "3.0 is older"}, "h5 brama: refused 3.0 [release_downgrade]: 3.0 is older"},
		{Line{Host: "h4", Product: "brama", Outcome: OutcomeNotAttempted, To: "3.0"}, "h4 brama: not attempted (3.0 declared): an earlier host failed"},
	} {
		if got := tc.l.Text(); got != tc.want {
			t.Errorf("got  %q\nwant %q", got, tc.want)
		}
	}
	r := Report{Mode: "apply", Failed: "h3/brama", Lines: []Line{{Outcome: "activated"}, {Outcome: "activated"}, {Outcome: "restored"}}}
	if got := r.Summary(); got != "apply: 2 activated, 1 restored; stopped at h3/brama" {
		t.Errorf("summary %q", got)
	}
}

func TestTheTableHasOneRowPerProduct(t *testing.T) {
	on := false
	h, cells := Table([]Row{{Host: "h1", Product: "brama", Status: StatusDiffers, PID: 9, OnActive: &on}}, time.Now())
	if len(cells) != 1 || len(cells[0]) != len(h) || !strings.Contains(cells[0][7], "NOT on active") {
		t.Fatalf("%v %v", h, cells)
	}
}
