package beacon

import (
	"context"
	"testing"
	"time"

	"github.com/wisent/stado/registry"
)

// A declaration of the Oarbank agent that sets kill_mode to another value
// than the catalog's is a doctor finding naming the setting and both
// values; one that leaves it out (and so renders with the product's) is
// not.
func TestDoctorNamesADeclarationOverridingASafetyRelevantSetting(t *testing.T) {
	d := &registry.Document{Version: 1}
	for _, tc := range []struct{ host, killMode string }{{"kept", ""}, {"overridden", "control-group"}} {
		s := registry.Service{Name: "agent", Unit: "oarbank-agent.service", Program: "/usr/local/bin/oarbank-agent",
			Product: "oarbank-agent", Env: map[string]string{"OARBANK_COORDINATOR": "https://coord.example/"}}
		s.KillMode = tc.killMode
		d.Targets = append(d.Targets, registry.Target{Name: tc.host, OS: "linux", SSH: registry.SSH{Address: "10.0.0.1"}, Services: []registry.Service{s}})
	}
	st := newStore(t)
	if _, err := registry.Push(context.Background(), st, d, 0, "test"); err != nil {
		t.Fatal(err)
	}
	for _, tg := range d.Targets {
		publish(t, st, Beacon{Host: tg.Name, Pass: 1, At: t0.Add(-time.Second), IntervalSeconds: 5, StaleAfterSeconds: 15,
			Units: []UnitReport{{Service: "agent", Unit: "oarbank-agent.service", State: StateActive, PID: 9}}})
	}
	res, err := DoctorOf(context.Background(), st, Reading{Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	var got []Finding
	for _, f := range res.Findings {
		if f.Code == "product_setting_overridden" {
			got = append(got, f)
		}
	}
	if len(got) != 1 || got[0].Host != "overridden" || got[0].Service != "agent" || got[0].Unit != "oarbank-agent.service" ||
		got[0].Message != "sets kill_mode: control-group over product oarbank-agent's process, which the catalog marks safety-relevant (registry field targets[1].services[0].kill_mode)" {
		t.Fatalf("override findings = %+v (all: %+v)", got, res.Findings)
	}
	if res.OK {
		t.Fatal("doctor says ok with an override finding")
	}
}
