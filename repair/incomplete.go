package repair

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/wisent/stado/alert"
	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/register"
	"github.com/wisent/stado/registry"
)

// DefaultIncompleteRealert is how often a declaration that stays
// incomplete is alerted again: once a day, so the alert is a reminder and
// not a flood.
const DefaultIncompleteRealert = 24 * time.Hour

// EventDeclarationIncomplete is the event of an IncompleteAlert.
const EventDeclarationIncomplete = "declaration_incomplete"

// IncompleteAlert is what a channel receives about a declaration of this
// host that names a unit but no program, so it cannot be reinstalled. Its
// environment is left out: values may be secrets.
type IncompleteAlert struct {
	Kind    string `json:"kind"`  // stado.alert
	Event   string `json:"event"` // declaration_incomplete
	Summary string `json:"summary"`
	Host    string `json:"host"`
	Service string `json:"service"`
	Unit    string `json:"unit"`
	// UnitPath and Reason are the declaration's unit_path and
	// incomplete_reason, when it has them.
	UnitPath string `json:"unit_path,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// Since is when this host first saw the declaration as it is now.
	Since time.Time `json:"since"`
	// Reminder is set on the alerts repeated while it stays incomplete.
	Reminder bool `json:"reminder,omitempty"`
}

// IncompleteAlerts alerts, on the channels of this host's target, every
// declaration of this host that is incomplete (declaration_incomplete):
// once when a pass first sees it as it now is (a new declaration, or any
// change to one that leaves it incomplete), then every Interval while it
// stays incomplete. The state lives in the host process: a restarted
// process alerts again at its first pass. Deliveries run off the pass; a
// channel that failed is reported in the next passes' refusals
// (alert_failed) until the next delivery. Safe for concurrent use.
type IncompleteAlerts struct {
	// alert.Alerter delivers; nil means the zero alert.Alerter.
	Alerter *alert.Alerter
	// Interval between reminders; 0 means DefaultIncompleteRealert.
	Interval time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	mu      sync.Mutex
	state   map[string]*incompleteState // by service name
	running sync.WaitGroup
}

// incompleteState is one incomplete declaration as last alerted.
type incompleteState struct {
	decl     string    // the declaration, encoded: a change is a new alert
	since    time.Time // when this declaration was first seen
	alerted  time.Time // when its latest alert was started
	failures []register.AlertOutcome
}

func (ia *IncompleteAlerts) now() time.Time {
	if ia.Now != nil {
		return ia.Now()
	}
	return time.Now()
}

func (ia *IncompleteAlerts) interval() time.Duration {
	if ia.Interval > 0 {
		return ia.Interval
	}
	return DefaultIncompleteRealert
}

// Idle waits until no delivery runs.
func (ia *IncompleteAlerts) Idle() { ia.running.Wait() }

// Contribute implements beacon.Contributor. It never waits on a channel;
// the deliveries it starts end with ctx.
func (ia *IncompleteAlerts) Contribute(ctx context.Context, p *beacon.Pass) {
	if p.Target == nil {
		return
	}
	now := ia.now().UTC()
	ia.mu.Lock()
	defer ia.mu.Unlock()
	if ia.state == nil {
		ia.state = map[string]*incompleteState{}
	}
	seen := map[string]bool{}
	for _, svc := range p.Target.Services {
		if !svc.Incomplete() {
			continue
		}
		seen[svc.Name] = true
		decl, _ := json.Marshal(svc)
		st := ia.state[svc.Name]
		reminder := false
		switch {
		case st == nil || st.decl != string(decl):
			st = &incompleteState{decl: string(decl), since: now}
			ia.state[svc.Name] = st
		case now.Sub(st.alerted) >= ia.interval():
			reminder = true
		default:
			for _, f := range st.failures {
				p.Refuse("alert_failed", svc.Name, "declaration_incomplete alert on channel %s failed: %s %s", f.Channel, f.Answer, f.Cause)
			}
			continue
		}
		st.alerted = now
		al := IncompleteAlert{Kind: alert.Kind, Event: EventDeclarationIncomplete, Host: p.Target.Name,
			Service: svc.Name, Unit: svc.Unit, UnitPath: svc.UnitPath, Reason: svc.IncompleteReason, Since: st.since, Reminder: reminder}
		al.Summary = fmt.Sprintf("%s on %s: declaration_incomplete: %s names no program, so it cannot be reinstalled; write its program and args into the entry (stado service show %s)",
			svc.Name, p.Target.Name, svc.Unit, svc.Name)
		if reminder {
			al.Summary += fmt.Sprintf(" (still incomplete since %s)", st.since.Format(time.RFC3339))
		}
		ia.running.Add(1)
		go ia.deliver(ctx, st, append([]registry.AlertChannel(nil), p.Target.Alerts...), al)
	}
	for name := range ia.state {
		if !seen[name] {
			delete(ia.state, name)
		}
	}
}

// deliver sends al on every channel and keeps the failures for the passes.
func (ia *IncompleteAlerts) deliver(ctx context.Context, st *incompleteState, channels []registry.AlertChannel, al IncompleteAlert) {
	defer ia.running.Done()
	a := ia.Alerter
	if a == nil {
		a = &alert.Alerter{}
	}
	out := a.Deliver(ctx, alert.OnOwningHost, channels, al)
	var failed []register.AlertOutcome
	for _, o := range out {
		if !o.OK {
			failed = append(failed, o)
		}
	}
	ia.mu.Lock()
	st.failures = failed
	ia.mu.Unlock()
}
