package catalog

import (
	"slices"
	"strings"
	"testing"
)

func TestAnEntrySaysItselfWithItsRepairSteps(t *testing.T) {
	c := Shipped()
	p, _ := c.Lookup("skarbiec")
	steps := c.RepairSteps(p)
	if len(steps) != 2 || steps[0].Name != "crypto" || steps[1].Name != "audit-lock" {
		t.Fatalf("repair steps %v", steps)
	}
	lines := p.Lines(steps)
	for _, want := range []string{"name:           skarbiec", "program:        /usr/local/bin/skarbiec serve", "port:           8200",
		"repair step:    crypto (shipped)", "  needs:        SKARBIEC_READY_WITHIN_SECONDS (from the caller)"} {
		if !slices.Contains(lines, want) {
			t.Errorf("no line %q in\n%s", want, strings.Join(lines, "\n"))
		}
	}
	// an entry without a question names no step
	if r, _ := c.RecoveryEntry("stado-host"); len(c.RepairSteps(r)) != 0 || c.RepairSteps(r) == nil {
		t.Errorf("recovery entry steps %v", c.RepairSteps(r))
	}
	header, rows := c.Table()
	if len(rows) != len(c.Products())+len(c.Recovery()) || len(rows[0]) != len(header) {
		t.Errorf("table %q: %d rows", header, len(rows))
	}
	if got := c.SiteLines(); got[1] != "site catalog: none (shipped catalog only); repair steps: "+strings.Join(stepNames(c), ", ") {
		t.Errorf("site lines %q", got)
	}
}

func stepNames(c *Catalog) (names []string) {
	for _, s := range c.Steps() {
		names = append(names, s.Name)
	}
	return names
}
