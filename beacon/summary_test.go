package beacon

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"
)

func TestSummariesSayWhereABlockStands(t *testing.T) {
	exit := 3
	cases := []struct {
		name, got, want string
	}{
		// an unknown row says why, a failed one its exit, the answer follows
		{"unknown row", Row{State: StateUnknown, Beacon: Freshness{Reason: "no beacon from h1"}}.Detail(), "no beacon from h1"},
		{"failed row", Row{State: StateFailed, LastExit: &exit, LastStderr: "boom", Incomplete: true,
			Answering: &Answering{State: AnswerWaiting, WaitedSeconds: 4}}.Detail(),
			"declaration_incomplete; last exit 3; stderr: boom; answering waiting 4s"},
		// a standing question with and without a recovery
		{"stood", (&Answering{State: AnswerStood, WaitedSeconds: 31, BoundSeconds: 10}).Summary(), "answering stood 31s (bound 10s), no recovery recorded"},
		{"stood again", (&Answering{State: AnswerStood, WaitedSeconds: 31, BoundSeconds: 10, AlreadyAttempted: true,
			RecordingRefusal: &FileRefusal{Op: "append", File: "f", Cause: "full"}}).Summary(),
			"answering stood 31s (bound 10s), already_attempted, recording_refusal: append f: full"},
		// answers: successful, not, refused, none yet
		{"answered", (&Answering{State: AnswerFinished, Finished: &Finished{Answered: &Answered{Status: 200, Successful: true, ElapsedMS: 7}}}).Summary(), "answered 200 in 7ms"},
		{"503", (&Answering{State: AnswerFinished, Finished: &Finished{Answered: &Answered{Status: 503, Detail: "warming"}}}).Summary(), "answered 503, not successful: warming"},
		{"refused", (&Answering{State: AnswerFinished, Finished: &Finished{Refused: &Refused{Cause: "connection refused"}}}).Summary(), "answering refused: connection refused"},
		{"asked", (&Answering{State: AnswerAsked}).Summary(), "answering asked"},
		// peers
		{"peer attempted", PeerRecovery{Service: "brama", Host: "h2", Held: 2, WaitedSeconds: 40, BoundSeconds: 10, Recovery: json.RawMessage(`{}`)}.Summary(),
			"brama on h2 standing (2 held, 40s > 10s): recovery attempted"},
		{"peer not recovered", PeerRecovery{Service: "brama", Host: "h2", NotRecovered: "no declaration"}.Summary(), "brama on h2 standing, not recovered: no declaration"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: %q, want %q", c.name, c.got, c.want)
		}
	}
}

func TestARowSaysItselfInLinesAndTheTablesHaveAColumnPerHeader(t *testing.T) {
	exit := 3
	r := Row{Host: "h1", Service: "brama", Unit: "brama.service", State: StateFailed, LastExit: &exit, Sentence: "it died",
		Beacon: Freshness{Kind: FreshnessFresh, Present: true, Pass: 4}, Answering: &Answering{State: AnswerWaiting, WaitedSeconds: 4, Question: &Question{Method: "GET", Path: "/readyz", Endpoint: "e"}}}
	want := []string{"brama on h1 (brama.service): failed", "  it died", "  last exit: 3", "  answering: answering waiting 4s", "    question: GET /readyz at e, repair -"}
	if got := r.Lines(); !reflect.DeepEqual(got, want) || !r.Failed() {
		t.Errorf("lines\n%q\nwant\n%q", got, want)
	}
	// an undeclared unit has no service: its table has no SERVICE column, and no header is a bare "-"
	if h, rows := RowsTable([]Row{r}, true); slices.Contains(h, "-") || slices.Contains(h, "SERVICE") || h[1] != "UNIT" || rows[0][3] != "-" || len(rows[0]) != len(h) {
		t.Errorf("rows %q %q", h, rows)
	}
	h, rows := HealthTable([]HostHealth{{Host: "h1", Beacon: Freshness{Kind: FreshnessStale, Present: true, Stale: true}, Counts: map[string]int{"failed": 1, "active": 2}}})
	if want := []string{"h1", "stale", "-", "-", "-", "active=2 failed=1", "0", ""}; !reflect.DeepEqual(rows[0], want) || len(h) != len(want) {
		t.Errorf("health %q", rows)
	}
	if h, rows := FindingsTable([]Finding{{Host: "h1", Unit: "u.service", Code: "undeclared", Message: "m"}}); rows[0][1] != "u.service" || len(rows[0]) != len(h) {
		t.Errorf("findings %q", rows)
	}
}

func TestProtocolEvidenceIsSaidInOneLine(t *testing.T) {
	yes, no := true, false
	at := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		p    Protocol
		want string
	}{
		{Protocol{State: ProtocolPending}, "protocol: first reading pending"},
		{Protocol{State: ProtocolRead, Running: &yes, Ready: &no, At: &at}, "protocol: running, not ready (read 2026-12-02T12:00:00Z)"},
		{Protocol{State: ProtocolRead, Running: &yes, Ready: &yes}, "protocol: running, ready"},
		{Protocol{State: ProtocolRead, Healthy: &no, Running: &no}, "protocol: not running, unhealthy"},
		{Protocol{State: ProtocolUnreadable, Op: "ready", Cause: "not one JSON document"}, "protocol unreadable: ready: not one JSON document"},
	}
	for _, tc := range cases {
		if got := tc.p.Summary(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.p, got, tc.want)
		}
	}
}
