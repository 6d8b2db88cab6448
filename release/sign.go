package release

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"aead.dev/minisign"

	"github.com/wisent/stado/refusal"
)

// SignManifest signs m with key: it sets m's Kind and Publisher (the key's
// id), encodes it and signs those bytes the way the minisign tool does by
// default (a BLAKE2b-prehashed Ed25519 signature), with a trusted comment
// naming the product, version, os/arch and digest. The result verifies
// with `minisign -V -p KEY.pub` over its Manifest bytes.
func SignManifest(m Manifest, key minisign.PrivateKey) (Signed, error) {
	if key.ID() == 0 {
		return Signed{}, refusal.New(refusal.Validation, "sign manifest: no private key")
	}
	m.Kind = KindManifest
	m.Publisher = KeyID(key.ID())
	if err := checkManifest(m); err != nil {
		return Signed{}, err
	}
	b, err := json.Marshal(m)
	if err != nil {
		return Signed{}, fmt.Errorf("sign manifest: %w", err)
	}
	r := minisign.NewReader(bytes.NewReader(b))
	if _, err := io.Copy(io.Discard, r); err != nil {
		return Signed{}, fmt.Errorf("sign manifest: %w", err)
	}
	trusted := fmt.Sprintf("stado release %s %s %s/%s sha256:%s", m.Product, m.Version, m.OS, m.Arch, m.SHA256)
	untrusted := "stado release manifest signed by key " + m.Publisher
	sig := r.SignWithComments(key, trusted, untrusted)
	return Signed{Kind: KindSigned, Manifest: b, Signature: string(sig)}, nil
}

// VerifySigned checks s against the pinned keys and that it names exactly
// product, version, goos, goarch; it returns the manifest it signs. Its
// refusals, in the order they are checked:
//
//  1. release_no_keys: keys is empty.
//  2. release_unsigned: s is no signed document, or its signature is empty
//     or not minisign's.
//  3. release_untrusted: no key of keys verifies the signature over the
//     manifest bytes (naming the signature's key id and the pinned ones).
//  4. release_mismatch: the signed bytes are no manifest of this format, or
//     name another product, version, os or arch than asked.
func VerifySigned(s Signed, keys []minisign.PublicKey, product, version, goos, goarch string) (Manifest, error) {
	what := fmt.Sprintf("%s %s for %s/%s", product, version, goos, goarch)
	if len(keys) == 0 {
		return Manifest{}, refusal.New(refusal.ReleaseNoKeys, "release %s: no release key is pinned to verify it with", what)
	}
	if s.Kind != KindSigned || strings.TrimSpace(s.Signature) == "" {
		return Manifest{}, refusal.New(refusal.ReleaseUnsigned, "release %s: the manifest carries no signature", what)
	}
	var sig minisign.Signature
	if err := sig.UnmarshalText([]byte(s.Signature)); err != nil {
		return Manifest{}, refusal.New(refusal.ReleaseUnsigned, "release %s: the signature is not a minisign signature: %v", what, err)
	}
	trusted := false
	pinned := make([]string, 0, len(keys))
	for _, k := range keys {
		pinned = append(pinned, KeyID(k.ID()))
		if minisign.Verify(k, s.Manifest, []byte(s.Signature)) {
			trusted = true
			break
		}
	}
	if !trusted {
		return Manifest{}, refusal.New(refusal.ReleaseUntrusted, "release %s: signed by key %s, which no pinned key (%s) verifies",
			what, KeyID(sig.KeyID), strings.Join(pinned, ", "))
	}
	m, err := DecodeManifest(s.Manifest)
	if err != nil {
		return Manifest{}, refusal.New(refusal.ReleaseMismatch, "release %s: the signed bytes are not a release manifest: %v", what, err)
	}
	if m.Product != product || m.Version != version || m.OS != goos || m.Arch != goarch {
		return Manifest{}, refusal.New(refusal.ReleaseMismatch, "release %s: the signed manifest is for %s %s %s/%s",
			what, m.Product, m.Version, m.OS, m.Arch)
	}
	return m, nil
}

// DecodeManifest reads the bytes of a manifest (signed or not: it checks no
// signature) and checks its shape: kind, names, digests, and chunks that
// add up to its size, each at most ChunkSize.
func DecodeManifest(b []byte) (Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return Manifest{}, err
	}
	if m.Kind != KindManifest {
		return Manifest{}, fmt.Errorf("kind %q, want %q", m.Kind, KindManifest)
	}
	return m, checkManifest(m)
}

// checkManifest checks what a manifest must hold before it is signed or
// trusted to fetch with.
func checkManifest(m Manifest) error {
	for _, err := range []error{ValidProduct(m.Product), ValidVersion(m.Version), ValidPlatform("os", m.OS), ValidPlatform("arch", m.Arch)} {
		if err != nil {
			return err
		}
	}
	if !validDigest(m.SHA256) {
		return refusal.New(refusal.Validation, "manifest sha256 %q is not 64 lowercase hex digits", m.SHA256)
	}
	if m.Size < 0 || m.Size > MaxImageBytes {
		return refusal.New(refusal.ContentTooLarge, "manifest size %d: an image is 0 to %d bytes", m.Size, int64(MaxImageBytes))
	}
	var sum int64
	for i, c := range m.Chunks {
		if !validDigest(c.SHA256) || c.Size <= 0 || c.Size > ChunkSize {
			return refusal.New(refusal.Validation, "manifest chunk %d: digest %q size %d (want 64 hex digits and 1 to %d bytes)", i, c.SHA256, c.Size, ChunkSize)
		}
		sum += c.Size
	}
	if sum != m.Size {
		return refusal.New(refusal.Validation, "manifest chunks hold %d bytes, its size is %d", sum, m.Size)
	}
	return nil
}

// validDigest reports whether s is a lowercase hex sha256.
func validDigest(s string) bool {
	if len(s) != 64 || strings.ToLower(s) != s {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}
