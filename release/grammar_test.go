package release_test

import (
	"testing"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/release"
)

func TestVersionsCompareNumericallyWithPreReleasesFirstAndBuildIgnored(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"1.9.0", "1.10.0", -1},                                   // numeric parts numerically, not byte-wise
		{"1.4.3", "1.4.3", 0},                                     // the same version
		{"2.0", "1.99.99", 1},                                     // the first part decides
		{"1.0.0-rc.1", "1.0.0", -1},                               // a pre-release before its release
		{"1.0.0-rc.2", "1.0.0-rc.10", -1},                         // pre-release parts numerically too
		{"1.0.0-alpha", "1.0.0-beta", -1},                         // non-numeric parts byte-wise
		{"1.0.0-1", "1.0.0-alpha", -1},                            // a numeric part before a non-numeric one
		{"1.0.0+build.1", "1.0.0+build.2", 0},                     // build metadata ignored
		{"1.0.0-rc.1+x", "1.0.0-rc.1", 0},                         // also after a pre-release
		{"1.2", "1.2.0", -1},                                      // fewer parts first
		{"1.02", "1.2", 0},                                        // leading zeros are numbers
		{"2024_01a", "2024_01b", -1},                              // runs within one part
		{"1.10a", "1.9a", 1},                                      // a digit run within a part numerically
		{"99999999999999999999999", "99999999999999999999998", 1}, // beyond int64
	} {
		if got := release.CompareVersions(c.a, c.b); got != c.want {
			t.Errorf("CompareVersions(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := release.CompareVersions(c.b, c.a); got != -c.want {
			t.Errorf("CompareVersions(%q, %q) = %d, want %d (antisymmetry)", c.b, c.a, got, -c.want)
		}
	}
}

func TestProductAndVersionNamesFollowTheirGrammar(t *testing.T) {
	for _, c := range []struct {
		product, version string
		ok               bool
	}{
		{"brama", "1.4.3", true},
		{"stado", "0.2.0-rc.1+build_7", true},
		{"web@2.blue", "v2", true},
		{"", "1.0", false},                         // no product
		{"brama", "", false},                       // no version
		{"-brama", "1.0", false},                   // a product starts with a letter or digit
		{"brama", "-1", false},                     // so does a version
		{"bra/ma", "1.0", false},                   // no '/' (a store key segment)
		{"brama", "1/0", false},                    // likewise
		{"brama", "1..0", false},                   // no '..' (refused in store keys)
		{"a..b", "1.0", false},                     // likewise in a product
		{"brama", "1.0 beta", false},               // no space
		{"brama", string(make([]byte, 65)), false}, // over 64 bytes
	} {
		err := release.ValidProduct(c.product)
		if err == nil {
			err = release.ValidVersion(c.version)
		}
		if (err == nil) != c.ok || (err != nil && !refusal.Is(err, refusal.Validation)) {
			t.Errorf("%q %q: err %v, want ok %v (validation refusal otherwise)", c.product, c.version, err, c.ok)
		}
	}
	for _, p := range []string{"linux", "darwin", "amd64", "arm64", "386", "ppc64le"} {
		if err := release.ValidPlatform("os", p); err != nil {
			t.Errorf("%s refused: %v", p, err)
		}
	}
	for _, p := range []string{"", "Linux", "linux-gnu", "x86_64", "a/b"} {
		if err := release.ValidPlatform("arch", p); err == nil {
			t.Errorf("%q accepted as a platform name", p)
		}
	}
}
