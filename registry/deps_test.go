package registry_test

import (
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// The bottom of the dependency graph: declaration is a leaf, store
// reaches only the leaves it writes with (safefile) and refuses with
// (refusal), and registry reaches those two and nothing else of stado, so
// every other package may import any of them.
func TestBottomPackagesImportOnlyTheirLeaves(t *testing.T) {
	const mod = "github.com/wisent/stado/"
	allowed := map[string][]string{
		"declaration":     nil,
		"store":           {"refusal", "safefile"},
		"store/etcdstore": {"refusal", "safefile", "store"},
		"registry":        {"declaration", "refusal", "safefile", "store"},
	}
	for pkg, want := range allowed {
		out, err := exec.Command("go", "list", "-deps", mod+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		var got []string
		for _, d := range strings.Fields(string(out)) {
			if rest, ok := strings.CutPrefix(d, mod); ok && rest != pkg {
				got = append(got, rest)
			}
		}
		sort.Strings(got)
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s depends on stado packages %q, want only %q", pkg, got, want)
		}
	}
}
