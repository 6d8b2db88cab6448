package autonomy

import (
	"context"
	"fmt"

	"github.com/wisent/stado/alert"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/register"
	"github.com/wisent/stado/registry"
)

// Alert events of the cycle.
const (
	EventRefused      = "autonomy_refused"       // a row was refused
	EventActionFailed = "autonomy_action_failed" // an action failed or its unit was not clean after it
)

// hostService keys a row across cycles: its host, its service and, for a
// release row, its product (so a service's own refusal and its product's
// are remembered apart).
type hostService struct{ host, service, product string }

// AlertRecord is one alert of a cycle and what each channel answered.
type AlertRecord struct {
	Host     string                  `json:"host"`
	Service  string                  `json:"service"`
	Event    string                  `json:"event"`
	Code     string                  `json:"code,omitempty"`
	Summary  string                  `json:"summary"`
	Channels []register.AlertOutcome `json:"channels"`
}

// alert delivers, on the host's alert channels, one alert per failed
// action and one per refusal that the previous cycle did not record for the
// same service and host with the same code (a standing refusal is alerted
// once, not every cycle). Hosts without channels are skipped.
//
// A cycle runs on whatever machine runs stado optimize run, in report or
// enforce mode, never in the host process of the target whose channels it
// alerts: it delivers alert.Elsewhere, so webhooks are posted and command
// channels are recorded as not run (the registry's argv never runs here).
func (r *Runner) alert(ctx context.Context, doc *registry.Document, c *Cycle) []AlertRecord {
	var before map[hostService]refusal.Code
	// previous reads the previous cycle's refusals, once, and only when a
	// refusal on a host with alert channels needs them.
	previous := func() map[hostService]refusal.Code {
		if before != nil {
			return before
		}
		before = map[hostService]refusal.Code{}
		if prev, _ := History(ctx, r.Store, 1); len(prev) > 0 {
			for _, row := range prev[0].Rows {
				if row.Refusal != nil {
					before[hostService{row.Host, row.Service, row.Product}] = row.Refusal.Code
				}
			}
		}
		return before
	}
	a := r.Alerter
	if a == nil {
		a = &alert.Alerter{}
	}
	var out []AlertRecord
	for _, row := range c.Rows {
		t, ok := doc.Target(row.Host)
		if !ok || len(t.Alerts) == 0 {
			continue
		}
		var rec AlertRecord
		switch {
		case row.Result != nil && !row.Result.OK:
			rec = AlertRecord{Event: EventActionFailed, Summary: failedSummary(row)}
			if row.Result.Error != nil {
				rec.Code = row.Result.Error.Code
			}
		case row.Refusal != nil && previous()[hostService{row.Host, row.Service, row.Product}] != row.Refusal.Code:
			rec = AlertRecord{Event: EventRefused, Code: string(row.Refusal.Code), Summary: fmt.Sprintf("autonomy cycle (%s) refused %s on %s: %s", c.Mode, row.Service, row.Host, row.Refusal.Message)}
		default:
			continue
		}
		rec.Host, rec.Service = row.Host, row.Service
		al := alert.Alert{Kind: alert.Kind, Event: rec.Event, Summary: rec.Summary,
			Recovery: register.Recovery{Kind: CycleKind, State: rec.Code, When: c.Start, Service: row.Service, Host: row.Host, Unit: row.Unit}}
		rec.Channels = a.Deliver(ctx, alert.Elsewhere, t.Alerts, al)
		out = append(out, rec)
	}
	return out
}

func failedSummary(row Row) string {
	res := row.Result
	why := "the unit was not clean afterwards"
	switch {
	case res.Error != nil:
		why = res.Error.Message
	case res.ReverifyError != "":
		why = "re-verify: " + res.ReverifyError
	case res.Reverify != nil:
		why = fmt.Sprintf("re-verify found it %s", res.Reverify.State)
		if res.Reverify.Drift {
			why += " with drifted bytes"
		}
	}
	what := row.Service
	if row.Product != "" {
		what = "release " + row.Product
	}
	return fmt.Sprintf("autonomy cycle: %s of %s on %s failed: %s", res.Action, what, row.Host, why)
}
