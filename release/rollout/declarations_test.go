package rollout

import (
	"slices"
	"testing"

	"github.com/wisent/stado/registry"
)

func TestDeclarationsOfLetATargetsOwnVersionWinOverTheFleetWideOne(t *testing.T) {
	doc := &registry.Document{Version: 1,
		Releases: map[string]registry.ReleaseDecl{"brama": {Version: "1.4.3"}},
		Targets: []registry.Target{
			{Name: "host1", Releases: map[string]registry.ReleaseDecl{"brama": {Version: "1.4.2", Pin: true}, "stado": {Version: "0.9.0"}}},
			{Name: "host2"},
		}}
	d := DeclarationsOf(doc)
	if !slices.Equal(d.Products, []string{"brama", "stado"}) {
		t.Fatalf("products %v", d.Products)
	}
	for _, c := range []struct {
		target, product, version string
		pin, ok                  bool
	}{
		{"host1", "brama", "1.4.2", true, true},
		{"host2", "brama", "1.4.3", false, true},
		{"host1", "stado", "0.9.0", false, true},
		{"host2", "stado", "", false, false},
	} {
		v, pin, ok := d.Release(c.target, c.product)
		if v != c.version || pin != c.pin || ok != c.ok {
			t.Errorf("%s %s: %q %v %v, want %q %v %v", c.target, c.product, v, pin, ok, c.version, c.pin, c.ok)
		}
	}
}
