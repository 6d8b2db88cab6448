package beacon

import (
	"encoding/json"
	"testing"
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
