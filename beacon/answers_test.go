package beacon

import (
	"testing"
	"time"

	"github.com/wisent/stado/registry"
)

// A host answers a service for the resolver only while its beacon is fresh
// and the service's latest answering verdict is a successful answer.
func TestAnswersNeedAFreshBeaconAndASuccessfulVerdict(t *testing.T) {
	now := time.Unix(10_000, 0).UTC()
	ok := &Finished{Answered: &Answered{Status: 200, Successful: true}}
	bad := &Finished{Answered: &Answered{Status: 503}}
	refused := &Finished{Refused: &Refused{Cause: "connection refused"}}
	blocks := map[string]*Answering{
		"h-finished":     {State: AnswerFinished, Finished: ok},
		"h-waiting":      {State: AnswerWaiting, Finished: ok},
		"h-stale":        {State: AnswerFinished, Finished: ok},
		"h-unsuccessful": {State: AnswerFinished, Finished: bad},
		"h-refused":      {State: AnswerFinished, Finished: refused},
		"h-stood":        {State: AnswerStood, Finished: ok},
		"h-asked":        {State: AnswerAsked},
		"h-unreadable":   {State: AnswerUnreadable, Unreadable: "no directory entry"},
		"h-none":         nil,
	}
	want := map[string]bool{"h-finished": true, "h-waiting": true}
	doc := &registry.Document{Version: 1}
	v := &View{Document: doc, Beacons: map[string]*Beacon{}, Unreadable: map[string]string{}, Now: now}
	for host, a := range blocks {
		doc.Targets = append(doc.Targets, registry.Target{Name: host, Services: []registry.Service{{Name: "brama", Unit: "brama.service"}}})
		at := now
		if host == "h-stale" {
			at = now.Add(-time.Hour)
		}
		v.Beacons[host] = &Beacon{Kind: Kind, Version: FormatVersion, Host: host, At: at, IntervalSeconds: 2,
			Units: []UnitReport{{Service: "brama", Unit: "brama.service", State: StateActive, Answering: a}}}
	}
	for host := range blocks {
		if got := v.Answers("brama", host); got != want[host] {
			t.Errorf("%s answers brama: %v, want %v", host, got, want[host])
		}
		if v.Answers("other", host) {
			t.Errorf("%s answers a service it does not declare", host)
		}
	}
	if v.Answers("brama", "h-absent") {
		t.Error("a host without a beacon answers")
	}
}
