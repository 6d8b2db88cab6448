package release

import (
	"strings"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
)

// ValidProduct checks a product name: a service name (letters, digits,
// '_', '.', '@', '-', a letter or digit first, at most 128 bytes) without
// "..". The grammar is the registry's, which validates declared versions
// with it. A bad name is a validation refusal naming it.
func ValidProduct(name string) error {
	if msg := registry.ReleaseProductProblem(name); msg != "" {
		return refusal.New(refusal.Validation, "product: %s", msg)
	}
	return nil
}

// ValidVersion checks a version: a letter or digit first, then letters,
// digits, '.', '+', '_', '-', at most 64 bytes, no "..". A bad version is a
// validation refusal naming it.
func ValidVersion(v string) error {
	if msg := registry.ReleaseVersionProblem(v); msg != "" {
		return refusal.New(refusal.Validation, "version: %s", msg)
	}
	return nil
}

// ValidPlatform checks an OS or architecture name as Go spells them
// (linux, darwin, amd64, arm64): 1-16 lowercase letters and digits. field
// names it in the refusal ("os", "arch").
func ValidPlatform(field, name string) error {
	ok := name != "" && len(name) <= 16
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
	}
	if !ok {
		return refusal.New(refusal.Validation, "%s: %q is not a platform name (1-16 lowercase letters and digits, as GOOS and GOARCH spell them)", field, name)
	}
	return nil
}

// CompareVersions orders two versions: -1 when a is older than b, 1 when
// newer, 0 when they are the same version. Build metadata (from the first
// '+') is ignored. The rest splits at the first '-' into the release and a
// pre-release; a pre-release sorts before its release. Each is compared
// part by part ('.'-separated), and within a part run by run: runs of
// digits numerically (leading zeros ignored), other runs byte-wise, a
// digit run before a non-digit one; when one list of parts (or runs) is a
// prefix of the other, the shorter sorts first. So 1.9 < 1.10,
// 1.0.0-rc.1 < 1.0.0-rc.2 < 1.0.0, and 1.0.0+a == 1.0.0+b.
func CompareVersions(a, b string) int {
	a, _, _ = strings.Cut(a, "+")
	b, _, _ = strings.Cut(b, "+")
	ar, ap, aPre := strings.Cut(a, "-")
	br, bp, bPre := strings.Cut(b, "-")
	if c := compareParts(ar, br); c != 0 {
		return c
	}
	switch {
	case aPre && !bPre:
		return -1
	case !aPre && bPre:
		return 1
	}
	return compareParts(ap, bp)
}

// compareParts compares two '.'-separated lists of parts.
func compareParts(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		if c := compareRuns(as[i], bs[i]); c != 0 {
			return c
		}
	}
	return sign(len(as) - len(bs))
}

// compareRuns compares two parts run by run (digits, non-digits).
func compareRuns(a, b string) int {
	for a != "" && b != "" {
		ra, rb := run(a), run(b)
		a, b = a[len(ra):], b[len(rb):]
		da, db := isDigit(ra[0]), isDigit(rb[0])
		switch {
		case da && db:
			if c := compareNumbers(ra, rb); c != 0 {
				return c
			}
		case da != db:
			if da {
				return -1
			}
			return 1
		default:
			if c := strings.Compare(ra, rb); c != 0 {
				return c
			}
		}
	}
	return sign(len(a) - len(b))
}

// run returns the leading run of s: its digits, or its non-digits.
func run(s string) string {
	d := isDigit(s[0])
	i := 1
	for i < len(s) && isDigit(s[i]) == d {
		i++
	}
	return s[:i]
}

// compareNumbers compares two digit strings of any length numerically.
func compareNumbers(a, b string) int {
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	if c := sign(len(a) - len(b)); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}
