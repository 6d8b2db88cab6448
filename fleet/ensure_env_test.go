package fleet_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/wisent/stado/fleet"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/units"
)

func TestEnvAssignmentsAreRefusedNamingWhatIsWrong(t *testing.T) {
	cases := []struct {
		in   []string
		want string // "" = accepted
	}{
		{[]string{"A=1", "B=x,y=z"}, ""},
		{[]string{"A=1", "A=1"}, ""},
		{[]string{"NOEQUALS"}, "is not KEY=VALUE"},
		{[]string{"1BAD=x"}, "1BAD"},
		{[]string{"A=line\nbreak"}, "control character"},
		{[]string{"A=1", "A=2"}, "given twice"},
		{[]string{"=value"}, "--env"},
		{[]string{"supersecretvalue-without-equals"}, "supersecretv…"},
	}
	for _, tc := range cases {
		got, err := fleet.ParseEnvAssignments(tc.in)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v, want accepted", tc.in, err)
		case tc.want == "" && got["A"] != "1":
			t.Errorf("%q: %v", tc.in, got)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !refusal.Is(err, refusal.Usage)):
			t.Errorf("%q: %v, want a usage refusal containing %q", tc.in, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "without-equals") {
			t.Errorf("%q: the refusal shows the whole argument: %v", tc.in, err)
		}
	}
	if got, _ := fleet.ParseEnvAssignments([]string{"B=x,y=z"}); got["B"] != "x,y=z" {
		t.Errorf("a comma or '=' in a value must be kept: %q", got["B"])
	}
}

// The agent's catalog entry requires OARBANK_COORDINATOR: a first install
// without it is refused naming it; with --env it is installed and the value
// is recorded in the declaration, masked in the outcome.
func TestEnsureFromTheCatalogTakesRequiredEnvFromTheCommandLine(t *testing.T) {
	b := newBed(t)
	_, err := b.ensure(t, fleet.EnsureOptions{Name: "oarbank-agent", AsLaunchAgent: true})
	if err == nil || !strings.Contains(err.Error(), "OARBANK_COORDINATOR") {
		t.Fatalf("without env: %v, want a refusal naming OARBANK_COORDINATOR", err)
	}
	r, err := b.ensure(t, fleet.EnsureOptions{Name: "oarbank-agent", AsLaunchAgent: true, Env: map[string]string{"OARBANK_COORDINATOR": "https://coord.example/secret-token"}})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Recorded || r.Service == nil || strings.Contains(r.Service.Env["OARBANK_COORDINATOR"], "secret-token") {
		t.Fatalf("outcome %+v: want recorded with the value masked", r)
	}
	doc, _, _ := registry.Load(context.Background(), b.store)
	tg, _ := doc.Target("host1")
	s, ok := tg.Service("oarbank-agent")
	if !ok || s.Env["OARBANK_COORDINATOR"] != "https://coord.example/secret-token" || s.Env["OARBANK_HOME"] != "/var/lib/oarbank" {
		t.Fatalf("recorded declaration %+v", s)
	}
	if s.KillMode != "process" || s.Delegate == nil || !*s.Delegate {
		t.Fatalf("recorded declaration lacks the product's settings: %+v", s.UnitSettings)
	}
}

// A declared instance lacking a required variable is refused before any
// host; --env records the value through the compare-and-swap and the host
// renders it (the unit changes, so it is restarted).
func TestEnsureOfADeclaredInstanceChecksAndRecordsItsEnv(t *testing.T) {
	b := newBed(t)
	ctx := context.Background()
	_, _, err := registry.Update(ctx, b.store, "declare the agent", func(d *registry.Document) error {
		tg, _ := d.Target("host1")
		tg.Services = append(tg.Services, registry.Service{Name: "agent", Unit: "agent.service", Scope: "user",
			Program: "/usr/local/bin/oarbank-agent", Args: []string{"run"}, Product: "oarbank-agent"})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	b.fleet, err = fleet.Open(ctx, b.store, b.fleet.Connect)
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.ensure(t, fleet.EnsureOptions{Name: "agent"})
	if err == nil || !strings.Contains(err.Error(), "OARBANK_COORDINATOR") {
		t.Fatalf("declared without the variable: %v, want a refusal naming it", err)
	}
	_, before, _ := registry.Load(ctx, b.store)
	r, err := b.ensure(t, fleet.EnsureOptions{Name: "agent", Env: map[string]string{"OARBANK_COORDINATOR": "https://a/"}})
	if err != nil {
		t.Fatal(err)
	}
	doc, after, _ := registry.Load(ctx, b.store)
	tg, _ := doc.Target("host1")
	s, _ := tg.Service("agent")
	if s.Env["OARBANK_COORDINATOR"] != "https://a/" || after.Revision != before.Revision+1 {
		t.Fatalf("declaration %+v at revision %d (was %d)", s.Env, after.Revision, before.Revision)
	}
	unit, err := os.ReadFile(units.UnitPath(*s, "linux", b.home))
	if err != nil || !strings.Contains(string(unit), "OARBANK_COORDINATOR=https://a/") {
		t.Fatalf("installed unit %q (%v), want the recorded value; outcome %+v", unit, err, r)
	}
	// the same value again writes no revision
	if _, err := b.ensure(t, fleet.EnsureOptions{Name: "agent", Env: map[string]string{"OARBANK_COORDINATOR": "https://a/"}}); err != nil {
		t.Fatal(err)
	}
	if _, again, _ := registry.Load(ctx, b.store); again.Revision != after.Revision {
		t.Fatalf("an unchanged value wrote revision %d", again.Revision)
	}
}
