package catalog

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/wisent/stado/registry"
)

// FuzzValidateSite feeds arbitrary documents to the site path: it must
// never panic, a refusal is always a *registry.ValidationError with at least
// one violation at a non-empty path, and an accepted document's products
// are found by name and by each of their unit identities.
func FuzzValidateSite(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Add(shippedProducts)
	f.Add(shippedRepair)
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ValidateSite(data, "fuzz")
		if err != nil {
			var ve *registry.ValidationError
			if !errors.As(err, &ve) || len(ve.Violations) == 0 {
				t.Fatalf("refusal %v is not a ValidationError with violations", err)
			}
			for _, v := range ve.Violations {
				if v.Path == "" {
					t.Fatalf("violation without a path: %v", v)
				}
			}
			return
		}
		for _, p := range m.Products() {
			for _, key := range []string{p.Name, p.Units.Systemd, p.Units.Launchd} {
				if key == "" {
					continue
				}
				if got, ok := m.Lookup(key); !ok || got != p {
					t.Fatalf("Lookup(%q) = %v, want %s", key, got, p.Name)
				}
			}
		}
	})
}

func BenchmarkValidateSiteGood(b *testing.B) {
	data, err := os.ReadFile("testdata/site.good.yaml")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := ValidateSite(data, "site.good.yaml"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLoadShippedFiles(b *testing.B) {
	for b.Loop() {
		if _, err := loadShipped(); err != nil {
			b.Fatal(err)
		}
	}
}
