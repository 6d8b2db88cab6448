package beacon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/release"
	"github.com/wisent/stado/store"
)

// MaxChunkBytes bounds one chunk the host API serves (the store keeps
// chunks of at most 512 KiB).
const MaxChunkBytes = 1 << 20

// ChunkPrefix is where the store keeps release chunks by digest.
const ChunkPrefix = store.ReleasePrefix + "chunks/"

// serveChunk is GET /api/release/chunk?sha256=HEX[&image=HEX&offset=N&size=M]:
// the bytes of one release chunk, for a peer whose store lacks it. With
// image, offset and size (which the asker reads from the signed manifest:
// the chunk's place in the whole file), they are read from the installed
// image images/IMAGE/ under r.ReleaseRoot; else, and when that fails,
// from the store. Bytes are served only when they have the digest asked
// for; the asker checks them again. 400 for a request that is not a
// digest, 404 when neither holds the chunk, 503 when the store cannot be
// read.
func (r *Runner) serveChunk(w http.ResponseWriter, req *http.Request, writeJSON func(http.ResponseWriter, int, any)) {
	q := req.URL.Query()
	sha := q.Get("sha256")
	refused := func(code int, machine, msg string) {
		writeJSON(w, code, map[string]any{"kind": "stado.release.chunk", "error": machine, "sha256": sha, "message": msg})
	}
	if !isDigest(sha) {
		refused(http.StatusBadRequest, "bad_digest", "want sha256=64 lowercase hex digits")
		return
	}
	if b, err := r.chunkFromImage(sha, q.Get("image"), q.Get("offset"), q.Get("size")); err == nil {
		writeChunk(w, b)
		return
	}
	b, err := chunkFromStore(req.Context(), r.Store, sha)
	switch {
	case errors.Is(err, store.ErrNotFound):
		refused(http.StatusNotFound, string(refusal.NotFound), "this host holds no chunk "+sha)
	case err != nil:
		refused(http.StatusServiceUnavailable, "store_unreadable", err.Error())
	default:
		writeChunk(w, b)
	}
}

func writeChunk(w http.ResponseWriter, b []byte) {
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	_, _ = w.Write(b)
}

func isDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// chunkFromImage reads size bytes at offset of the one file of the
// installed image, when they have the digest sha.
func (r *Runner) chunkFromImage(sha, image, offset, size string) ([]byte, error) {
	if r.ReleaseRoot == "" || !isDigest(image) {
		return nil, errors.New("no image named")
	}
	off, err1 := strconv.ParseInt(offset, 10, 64)
	n, err2 := strconv.Atoi(size)
	if err1 != nil || err2 != nil || off < 0 || n <= 0 || n > MaxChunkBytes {
		return nil, errors.New("no place in the image")
	}
	dir := release.ImageDir(r.ReleaseRoot, image)
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 || !entries[0].Type().IsRegular() {
		return nil, fmt.Errorf("%s holds no one image file", dir)
	}
	f, err := os.Open(filepath.Join(dir, entries[0].Name()))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if digestOf(b) != sha {
		return nil, errors.New("the image holds other bytes there")
	}
	return b, nil
}

// chunkFromStore reads a chunk from the store when it has its digest.
func chunkFromStore(ctx context.Context, st store.Store, sha string) ([]byte, error) {
	obj, err := st.Get(ctx, ChunkPrefix+sha)
	if err != nil {
		return nil, err
	}
	if len(obj.Value) > MaxChunkBytes || digestOf(obj.Value) != sha {
		return nil, fmt.Errorf("%w: the stored chunk %s does not have its digest", store.ErrNotFound, sha)
	}
	return obj.Value, nil
}
