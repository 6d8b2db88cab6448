package registry

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestAutonomySectionIsValidatedAtItsFieldPaths(t *testing.T) {
	cases := []struct {
		name string
		a    Autonomy
		path string // "" when valid
	}{
		{"absent section authorizes report only", Autonomy{}, ""},
		{"enforce with caps", Autonomy{Mode: AutonomyEnforce, MaxConcurrent: 3, MaxFraction: 0.5, FailureBudget: 2}, ""},
		{"unknown mode", Autonomy{Mode: "auto"}, "autonomy.mode"},
		{"negative concurrency", Autonomy{MaxConcurrent: -1}, "autonomy.max_concurrent"},
		{"fraction above one", Autonomy{MaxFraction: 1.5}, "autonomy.max_fraction"},
		{"fraction NaN", Autonomy{MaxFraction: math.NaN()}, "autonomy.max_fraction"},
		{"negative budget", Autonomy{FailureBudget: -2}, "autonomy.failure_budget"},
	}
	for _, c := range cases {
		d := &Document{Version: 1, Autonomy: c.a}
		err := Validate(d)
		if c.path == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		var ve *ValidationError
		if !errors.As(err, &ve) || len(ve.Violations) != 1 || ve.Violations[0].Path != c.path {
			t.Errorf("%s: got %v, want one violation at %s", c.name, err, c.path)
		}
	}
}

func TestAutonomySectionRoundTripsThroughYAMLAndIsOmittedWhenEmpty(t *testing.T) {
	src := "version: 1\nautonomy:\n  mode: enforce\n  max_concurrent: 3\n  max_fraction: 0.5\n  failure_budget: 2\ntargets: []\n"
	d, err := Parse([]byte(src), "fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if d.Autonomy != (Autonomy{Mode: AutonomyEnforce, MaxConcurrent: 3, MaxFraction: 0.5, FailureBudget: 2}) {
		t.Fatalf("parsed %+v", d.Autonomy)
	}
	if c := d.Clone(); c.Autonomy != d.Autonomy {
		t.Fatalf("clone lost the section: %+v", c.Autonomy)
	}
	d.Autonomy = Autonomy{}
	for _, f := range []string{FormatJSON, FormatYAML} {
		out, err := Marshal(d, f)
		if err != nil || strings.Contains(string(out), "autonomy") {
			t.Errorf("%s: an empty section is written (%v): %s", f, err, out)
		}
	}
}
