package refusal

import (
	"os"
	"sort"
	"strings"
	"testing"
)

// Every refusal code is documented in docs/exit-codes.md, in a row of its
// own: a code an operator meets can be looked up.
func TestEveryRefusalCodeIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/exit-codes.md")
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for c := range known {
		if !strings.Contains(string(doc), "| `"+string(c)+"` |") {
			missing = append(missing, string(c))
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("docs/exit-codes.md has no row for %d codes: %s", len(missing), strings.Join(missing, ", "))
	}
}
