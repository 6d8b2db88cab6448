package catalog

import "testing"

// The product name and its unit identities select one entry; a unit on the
// fixed recovery list is of source recovery even when declared.
func TestSourcesAndTheEntryANameSelects(t *testing.T) {
	c := Shipped()
	for _, name := range []string{"stado", "stado.service", "com.wisent.stado"} {
		p, ok := c.Entry(name)
		if !ok || p.Name != "stado" || p.Source != SourceProduct {
			t.Errorf("Entry(%s) = %+v, want the stado product", name, p)
		}
	}
	if p, ok := c.Entry("stado-host"); !ok || p.Source != SourceRecovery {
		t.Errorf("Entry(stado-host) = %+v, want the recovery entry", p)
	}
	cases := []struct {
		unit     string
		declared bool
		want     string
	}{
		{"stado.service", true, SourceRecovery},
		{"com.wisent.stado", false, SourceRecovery},
		{"brama.service", true, SourceRegistry},
		{"brama.service", false, SourceProduct},
		{"files.service", true, SourceRegistry},
		{"files.service", false, ""},
	}
	for _, tc := range cases {
		if got := c.SourceOf(tc.unit, tc.declared); got != tc.want {
			t.Errorf("SourceOf(%s, declared %v) = %q, want %q", tc.unit, tc.declared, got, tc.want)
		}
	}
}
