package release

// STUB: this file is replaced by the release core (keys, signing, the
// chunked store objects). The signatures below are the contract the host
// end and the rollout code against.

import (
	"context"
	"errors"

	"aead.dev/minisign"

	"github.com/wisent/stado/store"
)

var errNotBuilt = errors.New("release core not built yet")

// LoadSigned reads the signed manifest of product version for os/arch from
// the store (a not_found refusal when none is published).
func LoadSigned(ctx context.Context, st store.Store, product, version, goos, goarch string) (Signed, error) {
	return Signed{}, errNotBuilt
}

// VerifySigned checks s against the pinned keys and that it names exactly
// product, version, goos, goarch; it returns the manifest it signs.
func VerifySigned(s Signed, keys []minisign.PublicKey, product, version, goos, goarch string) (Manifest, error) {
	return Manifest{}, errNotBuilt
}

// Fetch reads m's chunks from the store, checks every chunk's digest and the
// whole file's size and digest, and returns the bytes.
func Fetch(ctx context.Context, st store.Store, m Manifest) ([]byte, error) {
	return nil, errNotBuilt
}

// LoadPublicKeys reads every *.pub file of dir (minisign public keys); a
// file that is not a key is refused naming it. An empty or missing dir is a
// release_no_keys refusal.
func LoadPublicKeys(dir string) ([]minisign.PublicKey, error) {
	return nil, errNotBuilt
}

// CompareVersions orders two versions (-1, 0, 1): dot-separated parts,
// numeric ones numerically; a pre-release (after '-') sorts before its
// release; build metadata (after '+') is ignored.
func CompareVersions(a, b string) int { return 0 }

// ValidProduct and ValidVersion check the names of the release flow.
func ValidProduct(name string) error { return errNotBuilt }

// ValidVersion checks a version string.
func ValidVersion(v string) error { return errNotBuilt }
