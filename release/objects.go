package release

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"aead.dev/minisign"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/store"
)

// Bounds of the stored objects.
const (
	// ChunkSize is the largest chunk: well under etcd's 1.5 MiB request
	// limit, so one chunk is one write on every backend.
	ChunkSize = 512 << 10
	// MaxImageBytes bounds a published file, and what Fetch holds in
	// memory for one manifest.
	MaxImageBytes = 1 << 30
	// MaxSignedBytes bounds a stored signed manifest (a 1 GiB image has
	// 2,048 chunks, about 300 KiB of manifest as stored).
	MaxSignedBytes = 4 << 20
)

// Store keys of the release objects.
const (
	ChunkPrefix    = store.ReleasePrefix + "chunks/"
	ManifestPrefix = store.ReleasePrefix + "manifests/"
)

// ChunkKey is where the chunk with digest sha is stored.
func ChunkKey(sha string) string { return ChunkPrefix + sha }

// ManifestKey is where the signed manifest of product version for
// goos/goarch is stored.
func ManifestKey(product, version, goos, goarch string) string {
	return ManifestPrefix + product + "/" + version + "/" + goos + "-" + goarch
}

// PublishRequest is one build to publish.
type PublishRequest struct {
	Product, Version, OS, Arch string
	Data                       []byte
	Key                        minisign.PrivateKey
	Reason                     string
	// Now is the manifest's publication time (zero: the clock's).
	Now time.Time
}

// PublishResult is what Publish wrote.
type PublishResult struct {
	Product string `json:"product"`
	Version string `json:"version"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
	// SHA256 and Size are the file's; ManifestSHA256 is the digest of the
	// signed manifest bytes, Key where they are stored.
	SHA256         string `json:"sha256"`
	Size           int64  `json:"size"`
	ManifestSHA256 string `json:"manifest_sha256"`
	Key            string `json:"key"`
	Publisher      string `json:"publisher"`
	Chunks         int    `json:"chunks"`
	// ChunksWritten were absent (or held other bytes) and were written;
	// ChunksReused were already stored with their digest.
	ChunksWritten int `json:"chunks_written"`
	ChunksReused  int `json:"chunks_reused"`
	// Unchanged: this version was already published with these bytes; no
	// manifest was written.
	Unchanged bool `json:"unchanged"`
}

// Publish stores req.Data as product version for os/arch: it cuts the
// bytes into chunks of ChunkSize, writes each chunk the store does not
// already hold with its digest (a chunk is shared by every manifest that
// holds its bytes), then writes the signed manifest with a create-only
// compare-and-swap. Chunks are written before the manifest, so a reader
// never finds a manifest whose chunks were never written.
//
// The same version already published with the same bytes is an unchanged
// success: no manifest is written, and a chunk found missing or altered is
// written again. With other bytes it is a conflict refusal naming both
// digests, before anything is written. Bad names are validation
// refusals; a file over MaxImageBytes is content_too_large.
func Publish(ctx context.Context, st store.Store, req PublishRequest) (PublishResult, error) {
	for _, err := range []error{ValidProduct(req.Product), ValidVersion(req.Version), ValidPlatform("os", req.OS), ValidPlatform("arch", req.Arch)} {
		if err != nil {
			return PublishResult{}, err
		}
	}
	key := ManifestKey(req.Product, req.Version, req.OS, req.Arch)
	if err := store.ValidateKey(key); err != nil {
		return PublishResult{}, refusal.New(refusal.Validation, "product and version are too long together: %v", err)
	}
	if int64(len(req.Data)) > MaxImageBytes {
		return PublishResult{}, refusal.New(refusal.ContentTooLarge, "%s %s is %d bytes, the limit is %d", req.Product, req.Version, len(req.Data), int64(MaxImageBytes))
	}
	if req.Key.ID() == 0 {
		return PublishResult{}, refusal.New(refusal.Validation, "publish %s %s: no signing key", req.Product, req.Version)
	}
	sum := sha256.Sum256(req.Data)
	res := PublishResult{Product: req.Product, Version: req.Version, OS: req.OS, Arch: req.Arch,
		SHA256: hex.EncodeToString(sum[:]), Size: int64(len(req.Data)), Key: key, Publisher: KeyID(req.Key.ID())}
	chunks := Split(req.Data)
	res.Chunks = len(chunks)

	existing, err := existingManifest(ctx, st, key, res.SHA256)
	if err != nil {
		return PublishResult{}, err
	}
	if existing != nil {
		return republish(ctx, st, req.Data, res, existing)
	}
	if err := writeChunks(ctx, st, req.Data, chunks, &res); err != nil {
		return res, err
	}
	now := req.Now
	if now.IsZero() {
		now = time.Now()
	}
	m := Manifest{Product: req.Product, Version: req.Version, OS: req.OS, Arch: req.Arch, SHA256: res.SHA256,
		Size: res.Size, Chunks: chunks, PublishedAt: now.UTC(), Reason: req.Reason}
	s, err := SignManifest(m, req.Key)
	if err != nil {
		return res, err
	}
	value, err := json.Marshal(s)
	if err != nil {
		return res, fmt.Errorf("publish %s: %w", key, err)
	}
	if _, err := st.CompareAndSwap(ctx, key, value, 0, store.PutOptions{}); err != nil {
		if !errors.Is(err, store.ErrConflict) {
			return res, fmt.Errorf("publish %s: %w", key, err)
		}
		// Another publisher of this version won the race: the same bytes
		// are a success, other bytes the conflict.
		existing, err := existingManifest(ctx, st, key, res.SHA256)
		if err != nil {
			return res, err
		}
		if existing != nil {
			res.Unchanged = true
			res.ManifestSHA256 = digest(existing.raw)
			return res, nil
		}
		return res, fmt.Errorf("publish %s: %w", key, err)
	}
	res.ManifestSHA256 = digest(s.Manifest)
	return res, nil
}

// stored is a manifest read back from the store, unverified.
type stored struct {
	m   Manifest
	raw []byte
}

// existingManifest reads the manifest at key: nil when none is stored, the
// manifest when it holds sha, a conflict refusal naming both digests when
// it holds other bytes.
func existingManifest(ctx context.Context, st store.Store, key, sha string) (*stored, error) {
	s, err := loadSignedAt(ctx, st, key)
	if refusal.Is(err, refusal.NotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, &refusal.Error{Code: refusal.Conflict, Message: fmt.Sprintf("%s already holds an object that is not a readable release manifest: %v", key, err), Err: err}
	}
	m, err := DecodeManifest(s.Manifest)
	if err != nil {
		return nil, refusal.New(refusal.Conflict, "%s already holds a manifest that cannot be read: %v", key, err)
	}
	if m.SHA256 != sha {
		return nil, &refusal.Error{Code: refusal.Conflict,
			Message: fmt.Sprintf("%s %s for %s/%s is already published with sha256 %s; these bytes have sha256 %s", m.Product, m.Version, m.OS, m.Arch, m.SHA256, sha),
			Hint:    "a published version never changes its bytes: publish them as a new version",
			Details: map[string]string{"key": key, "published_sha256": m.SHA256, "sha256": sha}}
	}
	return &stored{m: m, raw: s.Manifest}, nil
}

// republish is Publish of bytes already published under this version: it
// writes no manifest, and writes again any chunk of it that is missing or
// altered.
func republish(ctx context.Context, st store.Store, data []byte, res PublishResult, existing *stored) (PublishResult, error) {
	res.Unchanged = true
	res.ManifestSHA256 = digest(existing.raw)
	res.Publisher = existing.m.Publisher
	res.Chunks = len(existing.m.Chunks)
	err := writeChunks(ctx, st, data, existing.m.Chunks, &res)
	return res, err
}

// Split cuts data into chunks of ChunkSize (the last one shorter), each
// with its digest. Empty data has no chunk.
func Split(data []byte) []Chunk {
	chunks := make([]Chunk, 0, (len(data)+ChunkSize-1)/ChunkSize)
	for off := 0; off < len(data); off += ChunkSize {
		part := data[off:min(off+ChunkSize, len(data))]
		chunks = append(chunks, Chunk{SHA256: digest(part), Size: int64(len(part))})
	}
	return chunks
}

// writeChunks writes every chunk of data the store does not hold with its
// digest, counting written and reused ones into res. A chunk that appears
// twice in one file is written once.
func writeChunks(ctx context.Context, st store.Store, data []byte, chunks []Chunk, res *PublishResult) error {
	done := map[string]bool{}
	var off int64
	for _, c := range chunks {
		part := data[off : off+c.Size]
		off += c.Size
		if done[c.SHA256] {
			res.ChunksReused++
			continue
		}
		done[c.SHA256] = true
		key := ChunkKey(c.SHA256)
		obj, err := store.GetBounded(ctx, st, key, ChunkSize)
		switch {
		case err == nil && digest(obj.Value) == c.SHA256:
			res.ChunksReused++
			continue
		case err == nil, errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrTooLarge):
			// absent, or holding other bytes than its digest: write it
		default:
			return fmt.Errorf("read %s: %w", key, err)
		}
		if _, err := st.Put(ctx, key, part, store.PutOptions{}); err != nil {
			return fmt.Errorf("write %s: %w", key, err)
		}
		res.ChunksWritten++
	}
	return nil
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// LoadSigned reads the signed manifest of product version for os/arch
// from the store, unverified (VerifySigned verifies it). Refusals:
// not_found naming product, version and os/arch when none is published;
// release_unsigned when the stored object is no signed manifest document
// (or is over MaxSignedBytes).
func LoadSigned(ctx context.Context, st store.Store, product, version, goos, goarch string) (Signed, error) {
	for _, err := range []error{ValidProduct(product), ValidVersion(version), ValidPlatform("os", goos), ValidPlatform("arch", goarch)} {
		if err != nil {
			return Signed{}, err
		}
	}
	s, err := loadSignedAt(ctx, st, ManifestKey(product, version, goos, goarch))
	if refusal.Is(err, refusal.NotFound) {
		return Signed{}, &refusal.Error{Code: refusal.NotFound,
			Message: fmt.Sprintf("no release %s %s is published for %s/%s", product, version, goos, goarch),
			Hint:    "stado release publish " + product + " " + version + " FILE --os " + goos + " --arch " + goarch + " --key KEY", Err: err}
	}
	return s, err
}

func loadSignedAt(ctx context.Context, st store.Store, key string) (Signed, error) {
	obj, err := store.GetBounded(ctx, st, key, MaxSignedBytes)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return Signed{}, refusal.New(refusal.NotFound, "%s: not found", key)
	case errors.Is(err, store.ErrTooLarge):
		return Signed{}, refusal.New(refusal.ReleaseUnsigned, "%s is over %d bytes: no signed manifest", key, MaxSignedBytes)
	case err != nil:
		return Signed{}, fmt.Errorf("read %s: %w", key, err)
	}
	var s Signed
	if err := json.Unmarshal(obj.Value, &s); err != nil || s.Kind != KindSigned {
		if err == nil {
			err = fmt.Errorf("kind %q, want %q", s.Kind, KindSigned)
		}
		return Signed{}, refusal.New(refusal.ReleaseUnsigned, "%s is not a signed release manifest: %v", key, err)
	}
	return s, nil
}

// Fetch reads m's chunks from the store, checks every chunk's digest and
// the whole file's size and digest, and returns the bytes. It holds at
// most m.Size bytes, and refuses a manifest over MaxImageBytes
// (content_too_large) or whose chunks do not add up to its size
// (release_digest_mismatch) before reading anything. A missing chunk is a
// not_found refusal, a chunk whose bytes do not have its digest a
// release_tampered refusal, each naming the chunk's key; assembled bytes
// of another size or digest than the manifest's are
// release_digest_mismatch.
func Fetch(ctx context.Context, st store.Store, m Manifest) ([]byte, error) {
	what := fmt.Sprintf("%s %s for %s/%s", m.Product, m.Version, m.OS, m.Arch)
	if m.Size < 0 || m.Size > MaxImageBytes {
		return nil, refusal.New(refusal.ContentTooLarge, "release %s: its manifest says %d bytes, the limit is %d", what, m.Size, int64(MaxImageBytes))
	}
	var sum int64
	for _, c := range m.Chunks {
		if c.Size <= 0 || c.Size > ChunkSize || !validDigest(c.SHA256) {
			return nil, refusal.New(refusal.ReleaseDigest, "release %s: its manifest lists a chunk %q of %d bytes", what, c.SHA256, c.Size)
		}
		sum += c.Size
	}
	if sum != m.Size {
		return nil, refusal.New(refusal.ReleaseDigest, "release %s: its chunks hold %d bytes, the manifest says %d", what, sum, m.Size)
	}
	out := make([]byte, 0, m.Size)
	for _, c := range m.Chunks {
		key := ChunkKey(c.SHA256)
		obj, err := store.GetBounded(ctx, st, key, ChunkSize)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return nil, &refusal.Error{Code: refusal.NotFound, Message: fmt.Sprintf("release %s: chunk %s is missing from the store", what, key),
				Hint: "publish the same file again under the same version: it writes the missing chunks", Err: err}
		case errors.Is(err, store.ErrTooLarge):
			return nil, refusal.New(refusal.ReleaseTampered, "release %s: chunk %s is over %d bytes, so not the chunk its digest names", what, key, ChunkSize)
		case err != nil:
			return nil, fmt.Errorf("release %s: read %s: %w", what, key, err)
		}
		if digest(obj.Value) != c.SHA256 {
			return nil, refusal.New(refusal.ReleaseTampered, "release %s: chunk %s does not hold the bytes of its digest", what, key)
		}
		if int64(len(obj.Value)) != c.Size {
			return nil, refusal.New(refusal.ReleaseDigest, "release %s: chunk %s holds %d bytes, the manifest says %d", what, key, len(obj.Value), c.Size)
		}
		out = append(out, obj.Value...)
	}
	if got := digest(out); got != m.SHA256 {
		return nil, refusal.New(refusal.ReleaseDigest, "release %s: the assembled bytes have sha256 %s, the manifest says %s", what, got, m.SHA256)
	}
	return out, nil
}

// Published returns the manifests published for product (every product
// when product is ""), parsed but not verified, sorted by product, then
// version (CompareVersions, oldest first), then os/arch. It is for
// listing and prune; a host verifies with VerifySigned. An object under
// the manifest prefix that is no readable manifest is refused naming its
// key.
func Published(ctx context.Context, st store.Store, product string) ([]Manifest, error) {
	prefix := ManifestPrefix
	if product != "" {
		if err := ValidProduct(product); err != nil {
			return nil, err
		}
		prefix += product + "/"
	}
	objs, err := st.List(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", prefix, err)
	}
	out := make([]Manifest, 0, len(objs))
	for _, obj := range objs {
		var s Signed
		err := json.Unmarshal(obj.Value, &s)
		var m Manifest
		if err == nil {
			m, err = DecodeManifest(s.Manifest)
		}
		if err == nil && obj.Key != ManifestKey(m.Product, m.Version, m.OS, m.Arch) {
			err = fmt.Errorf("it names %s %s %s/%s", m.Product, m.Version, m.OS, m.Arch)
		}
		if err != nil {
			return nil, refusal.New(refusal.Unreadable, "%s is not a release manifest of its key: %v", obj.Key, err)
		}
		out = append(out, m)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Product != b.Product {
			return a.Product < b.Product
		}
		if c := CompareVersions(a.Version, b.Version); c != 0 {
			return c < 0
		}
		if a.Version != b.Version {
			return a.Version < b.Version
		}
		return a.OS+"-"+a.Arch < b.OS+"-"+b.Arch
	})
	return out, nil
}

// Platforms returns the os-arch names product version is published for,
// sorted (none: an empty list).
func Platforms(ctx context.Context, st store.Store, product, version string) ([]string, error) {
	prefix := ManifestPrefix + product + "/" + version + "/"
	objs, err := st.List(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", prefix, err)
	}
	out := []string{}
	for _, o := range objs {
		if p := strings.TrimPrefix(o.Key, prefix); !strings.Contains(p, "/") {
			out = append(out, p)
		}
	}
	return out, nil
}
