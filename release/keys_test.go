package release_test

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"aead.dev/minisign"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/release"
	"github.com/wisent/stado/tests/testbed"
)

// newKey generates an unencrypted key pair in a temporary directory and
// loads both halves back.
func newKey(t *testing.T) (minisign.PrivateKey, minisign.PublicKey, string) {
	t.Helper()
	dir := t.TempDir()
	pubPath, keyPath, err := release.GenerateKey(dir, release.DefaultKeyName, "")
	if err != nil {
		t.Fatal(err)
	}
	priv, err := release.LoadPrivateKey(keyPath, "")
	if err != nil {
		t.Fatal(err)
	}
	pub, err := release.LoadPublicKey(pubPath)
	if err != nil {
		t.Fatal(err)
	}
	return priv, pub, pubPath
}

func sampleManifest(data []byte) release.Manifest {
	return release.Manifest{Product: "brama", Version: "1.4.3", OS: "linux", Arch: "amd64",
		SHA256: digestOf(data), Size: int64(len(data)), Chunks: release.Split(data),
		PublishedAt: time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC)}
}

// A generated pair is minisign's own formats: the .pub (0644) and the .key
// (0600) read back through the library's parsers, the key signs and the
// public key verifies; a second generation into the same place is refused
// and leaves the first pair as it was.
func TestGeneratedKeysRoundTripAndAreNeverOverwritten(t *testing.T) {
	dir := t.TempDir()
	pubPath, keyPath, err := release.GenerateKey(dir, "ops", "")
	if err != nil {
		t.Fatal(err)
	}
	for p, mode := range map[string]os.FileMode{pubPath: 0o644, keyPath: 0o600} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != mode {
			t.Fatalf("%s: %v mode %v, want %v", p, err, fi.Mode().Perm(), mode)
		}
	}
	pubText, _ := os.ReadFile(pubPath)
	if !strings.HasPrefix(string(pubText), "untrusted comment: minisign public key: ") {
		t.Fatalf(".pub is not minisign's format:\n%s", pubText)
	}
	keyText, _ := os.ReadFile(keyPath)
	var priv minisign.PrivateKey
	if err := priv.UnmarshalText(keyText); err != nil {
		t.Fatalf("the library's own parser refuses the .key: %v", err)
	}
	pub, err := minisign.PublicKeyFromFile(pubPath)
	if err != nil || pub.ID() != priv.ID() {
		t.Fatalf("the library's own parser: %v, ids %X %X", err, pub.ID(), priv.ID())
	}
	s, err := release.SignManifest(sampleManifest([]byte("brama")), priv)
	if err != nil {
		t.Fatal(err)
	}
	var sig minisign.Signature
	if err := sig.UnmarshalText([]byte(s.Signature)); err != nil || sig.Algorithm != minisign.HashEdDSA ||
		!strings.Contains(sig.TrustedComment, "brama 1.4.3 linux/amd64") {
		t.Fatalf("signature %+v, %v: want minisign's prehashed algorithm and a trusted comment naming the build", sig, err)
	}
	if !minisign.Verify(pub, s.Manifest, []byte(s.Signature)) {
		t.Fatal("the library does not verify the signature with the generated .pub")
	}
	_, _, err = release.GenerateKey(dir, "ops", "")
	if !refusal.Is(err, refusal.Conflict) || !strings.Contains(err.Error(), "ops.") {
		t.Fatalf("second generation: %v, want a conflict naming the file", err)
	}
	if again, _ := os.ReadFile(pubPath); !bytes.Equal(again, pubText) {
		t.Fatal("the refused generation changed the .pub")
	}
}

// An encrypted key (minisign's scrypt format) opens with its password only.
// It costs about a second and 1 GiB of memory per open, as minisign's does.
func TestAnEncryptedKeyOpensWithItsPasswordOnly(t *testing.T) {
	if testing.Short() {
		testbed.Unavailable(t, "-short: an encrypted minisign key takes 1 GiB of memory to open")
	}
	_, keyPath, err := release.GenerateKey(t.TempDir(), "enc", "correct horse")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(keyPath)
	if !minisign.IsEncrypted(b) {
		t.Fatal("a key generated with a password is not encrypted")
	}
	if _, err := release.LoadPrivateKey(keyPath, ""); !refusal.Is(err, refusal.Validation) || !strings.Contains(err.Error(), "encrypted") {
		t.Fatalf("no password: %v", err)
	}
	if _, err := release.LoadPrivateKey(keyPath, "correct horse"); err != nil {
		t.Fatalf("right password: %v", err)
	}
}

// The pinned keys are every *.pub of the directory; a file that is not a
// key is refused naming it, and no key at all is release_no_keys.
func TestPinnedKeysAreEveryPubFileAndAStrayFileIsRefusedByName(t *testing.T) {
	dir := t.TempDir()
	if _, err := release.LoadPublicKeys(filepath.Join(dir, "absent")); !refusal.Is(err, refusal.ReleaseNoKeys) {
		t.Fatalf("missing dir: %v, want release_no_keys", err)
	}
	if _, err := release.LoadPublicKeys(dir); !refusal.Is(err, refusal.ReleaseNoKeys) {
		t.Fatalf("empty dir: %v, want release_no_keys", err)
	}
	for _, n := range []string{"a", "b"} {
		if _, _, err := release.GenerateKey(dir, n, ""); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := release.LoadPublicKeys(dir)
	if err != nil || len(keys) != 2 {
		t.Fatalf("two pairs: %d keys, %v", len(keys), err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.pub"), []byte("not a key\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := release.LoadPublicKeys(dir); !refusal.Is(err, refusal.Validation) || !strings.Contains(err.Error(), "notes.pub") {
		t.Fatalf("a stray .pub: %v, want a refusal naming notes.pub", err)
	}
}

// VerifySigned refuses, each with its code: no signature, a signature that
// is not minisign's, a key not pinned (naming the signature's key id), a
// manifest for another build, and signed bytes that are no manifest.
func TestVerifySignedRefusesEachWayAManifestCanBeWrong(t *testing.T) {
	priv, pub, _ := newKey(t)
	other, otherPub, _ := newKey(t)
	data := []byte("brama 1.4.3")
	good, err := release.SignManifest(sampleManifest(data), priv)
	if err != nil {
		t.Fatal(err)
	}
	m, err := release.VerifySigned(good, []minisign.PublicKey{otherPub, pub}, "brama", "1.4.3", "linux", "amd64")
	if err != nil || m.SHA256 != digestOf(data) || m.Publisher != release.KeyID(priv.ID()) {
		t.Fatalf("good manifest: %+v, %v", m, err)
	}
	byOther, _ := release.SignManifest(sampleManifest(data), other)
	notManifest := good
	{
		r := minisign.NewReader(bytes.NewReader([]byte(`{"kind":"something else"}`)))
		_, _ = io.Copy(io.Discard, r)
		notManifest = release.Signed{Kind: release.KindSigned, Manifest: []byte(`{"kind":"something else"}`), Signature: string(r.SignWithComments(priv, "x", "y"))}
	}
	for _, c := range []struct {
		name                   string
		s                      release.Signed
		keys                   []minisign.PublicKey
		product, version, arch string
		code                   refusal.Code
		says                   string
	}{
		{"no signature", release.Signed{Kind: release.KindSigned, Manifest: good.Manifest}, []minisign.PublicKey{pub}, "brama", "1.4.3", "amd64", refusal.ReleaseUnsigned, "no signature"},
		{"not minisign", release.Signed{Kind: release.KindSigned, Manifest: good.Manifest, Signature: "hello"}, []minisign.PublicKey{pub}, "brama", "1.4.3", "amd64", refusal.ReleaseUnsigned, "not a minisign signature"},
		{"unpinned key", byOther, []minisign.PublicKey{pub}, "brama", "1.4.3", "amd64", refusal.ReleaseUntrusted, release.KeyID(other.ID())},
		{"altered bytes", release.Signed{Kind: release.KindSigned, Manifest: bytes.Replace(good.Manifest, []byte("1.4.3"), []byte("1.4.4"), 1), Signature: good.Signature}, []minisign.PublicKey{pub}, "brama", "1.4.4", "amd64", refusal.ReleaseUntrusted, "no pinned key"},
		{"another arch", good, []minisign.PublicKey{pub}, "brama", "1.4.3", "arm64", refusal.ReleaseMismatch, "linux/amd64"},
		{"another version", good, []minisign.PublicKey{pub}, "brama", "1.4.2", "amd64", refusal.ReleaseMismatch, "brama 1.4.3"},
		{"another product", good, []minisign.PublicKey{pub}, "tilde", "1.4.3", "amd64", refusal.ReleaseMismatch, "brama"},
		{"not a manifest", notManifest, []minisign.PublicKey{pub}, "brama", "1.4.3", "amd64", refusal.ReleaseMismatch, "not a release manifest"},
		{"no keys", good, nil, "brama", "1.4.3", "amd64", refusal.ReleaseNoKeys, "no release key"},
	} {
		_, err := release.VerifySigned(c.s, c.keys, c.product, c.version, "linux", c.arch)
		if !refusal.Is(err, c.code) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want %s saying %q", c.name, err, c.code, c.says)
		}
	}
}

// The minisign tool verifies a manifest stado signed with a key stado
// generated, given only the .pub and the signature as files.
func TestTheMinisignToolVerifiesAStadoSignature(t *testing.T) {
	bin, err := exec.LookPath("minisign")
	if err != nil {
		testbed.Unavailable(t, "minisign is not installed (make deps installs it)")
	}
	priv, _, pubPath := newKey(t)
	s, err := release.SignManifest(sampleManifest([]byte("brama")), priv)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	msg, sig := filepath.Join(dir, "manifest.json"), filepath.Join(dir, "manifest.json.minisig")
	if err := os.WriteFile(msg, s.Manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sig, []byte(s.Signature), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "-V", "-p", pubPath, "-m", msg, "-x", sig).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "stado release brama 1.4.3 linux/amd64") {
		t.Fatalf("minisign -V: %v\n%s", err, out)
	}
	var m release.Manifest
	if err := json.Unmarshal(s.Manifest, &m); err != nil || m.Kind != release.KindManifest {
		t.Fatalf("the signed bytes are not the manifest: %v", err)
	}
}

// Keys cross both ways: `minisign -S` signs with an unencrypted key stado
// generated (and stado's public key verifies it), and stado signs with a
// key `minisign -G -W` generated (and minisign verifies it).
func TestMinisignKeysAndStadoKeysAreInterchangeable(t *testing.T) {
	bin, err := exec.LookPath("minisign")
	if err != nil {
		testbed.Unavailable(t, "minisign is not installed (make deps installs it)")
	}
	dir := t.TempDir()
	msg := filepath.Join(dir, "file")
	if err := os.WriteFile(msg, []byte("brama bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	pubPath, keyPath, err := release.GenerateKey(dir, "stado", "")
	if err != nil {
		t.Fatal(err)
	}
	sigPath := msg + ".minisig"
	cmd := exec.Command(bin, "-S", "-s", keyPath, "-m", msg, "-x", sigPath)
	cmd.Stdin = strings.NewReader("")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("minisign -S with a stado key: %v\n%s", err, out)
	}
	pub, _ := release.LoadPublicKey(pubPath)
	sig, _ := os.ReadFile(sigPath)
	if !minisign.Verify(pub, []byte("brama bytes"), sig) {
		t.Fatal("stado's public key does not verify what minisign signed with stado's private key")
	}

	mPub, mKey := filepath.Join(dir, "m.pub"), filepath.Join(dir, "m.key")
	if out, err := exec.Command(bin, "-G", "-W", "-p", mPub, "-s", mKey).CombinedOutput(); err != nil {
		t.Fatalf("minisign -G -W: %v\n%s", err, out)
	}
	priv, err := release.LoadPrivateKey(mKey, "")
	if err != nil {
		t.Fatalf("stado cannot open a minisign key: %v", err)
	}
	s, err := release.SignManifest(sampleManifest([]byte("brama")), priv)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(msg, s.Manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sigPath, []byte(s.Signature), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "-V", "-p", mPub, "-m", msg, "-x", sigPath).CombinedOutput(); err != nil {
		t.Fatalf("minisign -V of a manifest stado signed with a minisign key: %v\n%s", err, out)
	}
}
