package beacon

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/safefile"
	"github.com/wisent/stado/store"
)

// RegistryCache is where the read half remembers that it validated the
// registry a store holds, so that the next read command (a new process each
// time) does not validate the same document again: one whole-document
// validation is a large part of a read at fleet size.
//
// The cache is one small file per store in Dir (the user's cache
// directory), mode 0600, replaced atomically. It holds the store's identity
// (a digest of how the caller names the store, so no credentials of a store
// URL are written), the registry object's revision and a SHA-256 of the
// object's stored bytes: the verdict "valid" for exactly those bytes. It
// holds no document: the document is always decoded from what the store
// holds now (a faster encoding of it was tried; encoding/gob drops a
// pointer to false, such as keep_alive: false, so it cannot carry a
// registry).
//
// The registry object is read from the store on every call, and validation
// is skipped only when the revision and the digest of the bytes just read
// both match the record. A registry changed in the store, a store replaced
// by another at the same revision, or one edited by hand behind stado's
// back therefore is validated as before. An unreadable or mismatched cache
// file is ignored and replaced; failing to write it changes nothing but
// the next call's speed.
//
// Why the file is trusted: it lives in the user's own cache directory and
// is written 0600 by the user's own stado. Whoever can write it can already
// run code as that user (the binary on their PATH, their shell's rc files),
// so trusting it lets no one mislead the read half who could not already.
// It is never trusted for another store or for other bytes of the store.
type RegistryCache struct {
	// Dir is the directory of the cache files; it is created (0700) when
	// missing.
	Dir string
	// Store names the store as the caller opened it (its URL); only its
	// digest is written.
	Store string
}

// cacheMagic starts a cache file, with the format's version: a file of
// another format reads as a miss.
const cacheMagic = "stado-validated-registry 1"

func (c *RegistryCache) storeID() string {
	sum := sha256.Sum256([]byte(c.Store))
	return hex.EncodeToString(sum[:])
}

func (c *RegistryCache) path() string {
	return filepath.Join(c.Dir, "registry-"+c.storeID()[:24])
}

// record is the cache file's one line for obj.
func (c *RegistryCache) record(obj store.Object) []byte {
	sum := sha256.Sum256(obj.Value)
	return fmt.Appendf(nil, "%s %s %d %x\n", cacheMagic, c.storeID(), obj.Revision, sum)
}

// LoadValidated reads the registry from st and validates it as a push
// does, unless cache (nil: none) recorded these very bytes as valid. A
// store without a registry is an error wrapping store.ErrNotFound; an
// invalid document is an error wrapping the *registry.ValidationError.
// The cache is written only after a successful validation.
func LoadValidated(ctx context.Context, st store.Store, cache *RegistryCache) (*registry.Document, store.Meta, error) {
	r := loadRegistry(ctx, st, cache, decodeWhole)
	return r.doc, r.meta, r.err
}

// decoding is how much of a registry whose validation the cache holds is
// decoded.
type decoding int

const (
	decodeWhole   decoding = iota // the whole document
	decodeRows                    // only what the join reads (Selection.RowsOnly)
	decodeOutline                 // a registry.Outline (Selection.Outline)
)

// loadedRegistry is what loadRegistry read: the document (nil with rows
// only), the join's declarations when only those were decoded, the
// outline when one was.
type loadedRegistry struct {
	doc     *registry.Document
	decl    []declaredTarget
	outline *registry.Outline
	meta    store.Meta
	err     error
}

// loadRegistry is LoadValidated; with a cache hit it decodes only as much
// as how asks for. Without one the whole document is decoded and
// validated, however little was asked for.
func loadRegistry(ctx context.Context, st store.Store, cache *RegistryCache, how decoding) loadedRegistry {
	obj, err := st.Get(ctx, store.RegistryKey)
	if err != nil {
		return loadedRegistry{err: fmt.Errorf("read registry: load registry: %w", err)}
	}
	var rec []byte
	if cache != nil {
		rec = cache.record(obj)
		if old, err := os.ReadFile(cache.path()); err == nil && bytes.Equal(old, rec) {
			// these bytes were decoded strictly and validated before
			switch how {
			case decodeRows:
				if o, meta, err := registry.DecodeOutline(obj); err == nil {
					return loadedRegistry{decl: declarationsOf(o.Doc, o), meta: meta}
				}
			case decodeOutline:
				if o, meta, err := registry.DecodeOutline(obj); err == nil {
					return loadedRegistry{doc: o.Doc, outline: o, meta: meta}
				}
			default:
				if doc, meta, err := registry.DecodeCheckedObject(obj); err == nil {
					return loadedRegistry{doc: doc, meta: meta}
				}
			}
		}
	}
	doc, meta, err := registry.DecodeObject(obj)
	if err != nil {
		return loadedRegistry{err: fmt.Errorf("read registry: %w", err)}
	}
	if err := registry.Validate(doc); err != nil {
		return loadedRegistry{err: fmt.Errorf("the registry stored at revision %d is invalid (was it changed outside stado?): %w", meta.Revision, err)}
	}
	if cache != nil && os.MkdirAll(cache.Dir, 0o700) == nil {
		_ = safefile.Write(cache.path(), rec, 0o600) // a cache that cannot be written is no cache
	}
	return loadedRegistry{doc: doc, meta: meta}
}
