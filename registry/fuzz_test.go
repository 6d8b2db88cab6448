package registry_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/wisent/stado/registry"
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
