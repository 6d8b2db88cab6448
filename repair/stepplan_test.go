package repair

import (
	"context"
	"testing"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
)

func stepPlanDoc(refresh int) *registry.Document {
	return &registry.Document{Version: 1, ServiceResolver: registry.ServiceResolver{RefreshSeconds: refresh},
		Targets: []registry.Target{{Name: "h1", OS: registry.OSLinux,
			Services: []registry.Service{{Name: "skarbiec", Unit: "skarbiec.service", Program: "/usr/local/bin/skarbiec", Product: "skarbiec"}}}}}
}

func TestPlanStepResolvesForTheTargetOrRefuses(t *testing.T) {
	p, err := PlanStep(stepPlanDoc(12), nil, "skarbiec", "h1", "crypto")
	if err != nil {
		t.Fatal(err)
	}
	if p.OS != registry.OSLinux || p.Argv[0] != "/usr/local/bin/skarbiec" || p.Env["SKARBIEC_READY_WITHIN_SECONDS"] != "12" || p.Applied {
		t.Errorf("plan %+v", p)
	}
	cases := []struct {
		name                  string
		doc                   *registry.Document
		service, target, step string
		want                  refusal.Code
	}{
		// no registry, or no such target
		{"no registry", nil, "skarbiec", "h1", "crypto", refusal.NotFound},
		{"target", stepPlanDoc(5), "skarbiec", "nowhere", "crypto", refusal.NotFound},
		// neither declared on the target nor a catalog product
		{"service", stepPlanDoc(5), "nothing-here", "h1", "crypto", refusal.NotFound},
		// the repair catalog has no such step
		{"step", stepPlanDoc(5), "skarbiec", "h1", "no-such-step", refusal.StepUnknown},
		// the step needs the refresh interval the registry does not give
		{"input", stepPlanDoc(0), "skarbiec", "h1", "crypto", refusal.InputMissing},
	}
	for _, c := range cases {
		if _, err := PlanStep(c.doc, nil, c.service, c.target, c.step); !refusal.Is(err, c.want) {
			t.Errorf("%s: %v, want %s", c.name, err, c.want)
		}
	}
	// the fixed recovery list's step needs no declaration of stado
	if _, err := PlanStep(stepPlanDoc(5), nil, "stado", "h1", "host"); err != nil {
		t.Errorf("host step: %v", err)
	}
}

func TestStepPlanApplyKeepsTheReportAndRefusesAFailure(t *testing.T) {
	site := "version: 1\nsteps:\n  ok:\n    linux: {argv: [/bin/true], timeout_seconds: 5}\n  broken:\n    linux: {argv: [/bin/false], timeout_seconds: 5}\n"
	frag, err := catalog.ValidateSite([]byte(site), "test")
	if err != nil {
		t.Fatal(err)
	}
	ex := testHost(func() *catalog.Catalog { return frag }, nil, nil)
	p, err := PlanStep(stepPlanDoc(5), frag, "skarbiec", "h1", "ok")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Apply(context.Background(), ex); err != nil || !p.Applied || p.Report == nil || !p.Report.OK {
		t.Fatalf("ok step: %v %+v", err, p.Report)
	}
	p, _ = PlanStep(stepPlanDoc(5), frag, "skarbiec", "h1", "broken")
	if err := p.Apply(context.Background(), ex); !refusal.Is(err, CodeStepFailed) || p.Report.OK {
		t.Fatalf("broken step: %v %+v", err, p.Report)
	}
}

func TestMaskSecretsHidesSecretLookingValuesOnly(t *testing.T) {
	got := MaskSecrets(map[string]string{"API_TOKEN": "abc", "DB_PASSWORD": "x", "GNUPGHOME": "/var/lib/g", "SKARBIEC_READY_WITHIN_SECONDS": "5"})
	if got["API_TOKEN"] == "abc" || got["DB_PASSWORD"] == "x" || got["GNUPGHOME"] != "/var/lib/g" || got["SKARBIEC_READY_WITHIN_SECONDS"] != "5" {
		t.Errorf("%v", got)
	}
}
