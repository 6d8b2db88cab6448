package registry_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/wisent/stado/registry"
	"gopkg.in/yaml.v3"
)

// FuzzParseDocument: parsing and validating any input never panics, and a
// document that parses and validates renders (YAML and JSON) to bytes that
// parse and validate again and render identically.
func FuzzParseDocument(f *testing.F) {
	for _, glob := range []string{"testdata/good/*", "testdata/bad/*.yaml", "testdata/bad/*.json", "../examples/*.yaml"} {
		files, _ := filepath.Glob(glob)
		for _, name := range files {
			if data, err := os.ReadFile(name); err == nil {
				f.Add(data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := registry.Parse(data, "fuzz")
		if err != nil {
			return
		}
		if registry.Validate(d) != nil {
			return
		}
		for _, format := range []string{registry.FormatYAML, registry.FormatJSON} {
			out, err := registry.Marshal(d, format)
			if err != nil {
				t.Fatalf("marshal valid document as %s: %v", format, err)
			}
			back, err := registry.Parse(out, "round trip")
			if err != nil {
				t.Fatalf("own %s does not parse: %v\n%s", format, err, out)
			}
			if err := registry.Validate(back); err != nil {
				t.Fatalf("own %s does not validate: %v\n%s", format, err, out)
			}
			again, err := registry.Marshal(back, format)
			if err != nil || !bytes.Equal(out, again) {
				t.Fatalf("%s round trip differs:\n%s\n---\n%s", format, out, again)
			}
		}
	})
}

// FuzzParseBudget: the parse budget's scan of YAML never counts fewer
// nodes or mappings than yaml.v3 builds (aliases are counted as expanded
// separately), so no input passes the budget with a bigger tree than the
// budget allows; and Parse never returns a tree past the budget.
func FuzzParseBudget(f *testing.F) {
	for _, glob := range []string{"testdata/good/*", "testdata/bad/*.yaml", "../examples/*.yaml"} {
		files, _ := filepath.Glob(glob)
		for _, name := range files {
			if data, err := os.ReadFile(name); err == nil {
				f.Add(data)
			}
		}
	}
	for _, s := range []string{"x: [a, {b: c}, [d: e]]\n", "? a\n: b\n", "- - a: 1\n    b: 2\n", "a: |\n  [x]\nb: 'it''s'\n", "k: \"a\\\"\" # c\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		nodes, maps := registry.BudgetCounts(data)
		var root yaml.Node
		if yaml.Unmarshal(data, &root) != nil || len(root.Content) == 0 {
			return
		}
		var realNodes, realMaps int
		var walk func(n *yaml.Node)
		walk = func(n *yaml.Node) {
			realNodes++
			if n.Kind == yaml.MappingNode {
				realMaps++
			}
			for _, c := range n.Content {
				walk(c)
			}
		}
		for _, c := range root.Content {
			walk(c)
		}
		if realNodes > nodes || realMaps > maps {
			t.Fatalf("yaml.v3 built %d nodes and %d mappings, the scan counted %d and %d:\n%q", realNodes, realMaps, nodes, maps, data)
		}
	})
}
