package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/user"
	"sort"
	"strconv"
	"time"

	"github.com/wisent/stado/store"
)

// envelope is the stored form of the registry (store.RegistryKey and each
// history entry): {"meta": {...}, "document": {...}}. The object at
// store.RegistryKey carries no meta.revision (it is not known before the
// compare-and-swap answers); Load takes it from the store. History entries
// carry it.
type envelope struct {
	Meta     store.Meta `json:"meta"`
	Document *Document  `json:"document"`
}

// Writer names who writes from this process: $STADO_WRITER when set,
// otherwise user@hostname.
func Writer() string {
	if w := os.Getenv("STADO_WRITER"); w != "" {
		return w
	}
	name := "unknown"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return name + "@" + host
}

// now is the clock of Push; tests replace it.
var now = time.Now

func decodeEnvelope(obj store.Object) (*Document, store.Meta, error) {
	return decodeEnvelopeAs(obj, true)
}

// decodeEnvelopeAs is decodeEnvelope refusing unknown fields when strict.
func decodeEnvelopeAs(obj store.Object, strict bool) (*Document, store.Meta, error) {
	if err := checkStored(obj); err != nil {
		return nil, store.Meta{}, err
	}
	layout := scanEnvelope(obj.Value)
	env, ok := decodeSplit(obj.Value, layout, strict, presizedTargets, decodeTarget)
	if !ok {
		env = envelope{Document: layout.presized()}
		if err := DecodeStored(obj.Value, &env, strict); err != nil {
			return nil, store.Meta{}, fmt.Errorf("read %s at revision %d: %w", obj.Key, obj.Revision, &ParseError{Source: obj.Key, Msg: err.Error()})
		}
	}
	if env.Document == nil {
		return nil, store.Meta{}, fmt.Errorf("read %s at revision %d: %w", obj.Key, obj.Revision, &ParseError{Source: obj.Key, Msg: "envelope has no document"})
	}
	if obj.Key == store.RegistryKey || env.Meta.Revision == 0 {
		env.Meta.Revision = obj.Revision
	}
	return env.Document, env.Meta, nil
}

// checkStored refuses a stored envelope over the document's bounds before
// anything of it is decoded.
func checkStored(obj store.Object) error {
	// The envelope adds its meta to a document of at most MaxDocumentBytes.
	if len(obj.Value) > MaxDocumentBytes+64<<10 {
		return fmt.Errorf("read %s at revision %d: %w", obj.Key, obj.Revision, &ParseError{Source: obj.Key, Msg: fmt.Sprintf("stored document is %d bytes, the limit is %d (docs/limits.md)", len(obj.Value), MaxDocumentBytes)})
	}
	if err := checkJSONBudget(obj.Value, obj.Key); err != nil {
		return fmt.Errorf("read %s at revision %d: %w", obj.Key, obj.Revision, err)
	}
	return nil
}

// Load returns the current registry and its meta. An empty store returns
// an error wrapping store.ErrNotFound. Load does not validate: the document was
// validated when it was written.
func Load(ctx context.Context, st store.Store) (*Document, store.Meta, error) {
	obj, err := st.Get(ctx, store.RegistryKey)
	if err != nil {
		return nil, store.Meta{}, fmt.Errorf("load registry: %w", err)
	}
	return decodeEnvelope(obj)
}

// DecodeObject reads obj, the stored registry object (the one at
// store.RegistryKey or a history entry), as Load does after its Get: it
// does not validate. A value that is no registry envelope is an error
// wrapping a *ParseError.
func DecodeObject(obj store.Object) (*Document, store.Meta, error) { return decodeEnvelope(obj) }

// DecodeCheckedObject is DecodeObject for bytes that DecodeObject already
// read without error (a reader's record of them, such as the read half's
// validated-registry cache): it does not check again for fields the
// document does not know, which lets it decode the bytes in place instead
// of through a streaming decoder's growing buffer. Bytes DecodeObject
// would refuse may decode here; its errors are DecodeObject's.
func DecodeCheckedObject(obj store.Object) (*Document, store.Meta, error) {
	return decodeEnvelopeAs(obj, false)
}

// LoadRevision returns registry revision rev from its history entry (or
// from the current object when rev is current and its history entry was
// never written). An unknown revision wraps store.ErrNotFound.
func LoadRevision(ctx context.Context, st store.Store, rev int64) (*Document, store.Meta, error) {
	obj, err := st.Get(ctx, store.HistoryKey(rev))
	if err == nil {
		d, m, err := decodeEnvelope(obj)
		m.Revision = rev
		return d, m, err
	}
	if !errors.Is(err, store.ErrNotFound) {
		return nil, store.Meta{}, fmt.Errorf("load registry revision %d: %w", rev, err)
	}
	cur, err := st.Get(ctx, store.RegistryKey)
	if err == nil && cur.Revision == rev {
		return decodeEnvelope(cur)
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, store.Meta{}, fmt.Errorf("load registry revision %d: %w", rev, err)
	}
	return nil, store.Meta{}, fmt.Errorf("load registry revision %d: %w", rev, store.ErrNotFound)
}

// History returns the meta of every retained revision, oldest first. The
// current revision is always included, even when a writer died between
// its compare-and-swap and its history entry. An empty store returns an
// empty list and no error.
func History(ctx context.Context, st store.Store) ([]store.Meta, error) {
	objs, err := st.List(ctx, store.RegistryHistoryPrefix)
	if err != nil {
		return nil, fmt.Errorf("registry history: %w", err)
	}
	var out []store.Meta
	seen := map[int64]bool{}
	for _, obj := range objs {
		var env struct {
			Meta store.Meta `json:"meta"`
		}
		if err := json.Unmarshal(obj.Value, &env); err != nil {
			return nil, fmt.Errorf("registry history: %s: %w", obj.Key, &ParseError{Source: obj.Key, Msg: err.Error()})
		}
		if env.Meta.Revision == 0 {
			env.Meta.Revision = obj.Revision
		}
		seen[env.Meta.Revision] = true
		out = append(out, env.Meta)
	}
	if _, m, err := Load(ctx, st); err == nil && !seen[m.Revision] {
		out = append(out, m)
	} else if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("registry history: %w", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Revision < out[j].Revision })
	return out, nil
}

// Push validates d and writes it with a compare-and-swap against expect
// (0: the store must hold no registry yet), then records the revision in
// the history. An invalid d returns a *ValidationError and writes nothing;
// a lost race returns an error wrapping *ConflictError. If the document
// was written but its history entry could not be, Push returns the new
// Meta together with an error saying so. Safe for concurrent use.
func Push(ctx context.Context, st store.Store, d *Document, expect int64, reason string) (store.Meta, error) {
	if err := Validate(d); err != nil {
		return store.Meta{}, err
	}
	doc, err := json.Marshal(d)
	if err != nil {
		return store.Meta{}, fmt.Errorf("push registry: %w", err)
	}
	meta := store.Meta{Writer: Writer(), Time: now().UTC(), Reason: reason}
	value, err := store.EncodeEnvelope(meta, doc)
	if err != nil {
		return store.Meta{}, fmt.Errorf("push registry: %w", err)
	}
	rev, err := st.CompareAndSwap(ctx, store.RegistryKey, value, expect, store.PutOptions{})
	if err != nil {
		return store.Meta{}, fmt.Errorf("push registry: %w", err)
	}
	meta.Revision = rev
	hist, err := store.EncodeEnvelope(meta, doc)
	if err == nil {
		_, err = st.Put(ctx, store.HistoryKey(rev), hist, store.PutOptions{})
	}
	if err != nil {
		return meta, fmt.Errorf("registry revision %d was written but its history entry was not: %w", rev, err)
	}
	pruneHistory(ctx, st, rev, HistoryKeep())
	return meta, nil
}

// DefaultHistoryKeep is how many registry revisions the history keeps
// when $STADO_HISTORY_KEEP does not say (docs/limits.md).
const DefaultHistoryKeep = 100

// HistoryKeep is the number of registry revisions the history keeps: the
// positive integer in $STADO_HISTORY_KEEP, else DefaultHistoryKeep.
func HistoryKeep() int64 {
	if n, err := strconv.ParseInt(os.Getenv("STADO_HISTORY_KEEP"), 10, 64); err == nil && n > 0 {
		return n
	}
	return DefaultHistoryKeep
}

// pruneHistory removes the history entry that revision rev pushes out of
// the newest keep, and every 32nd revision the 64 before it too (entries
// an interrupted writer, or a larger keep earlier, left behind). The
// current revision is never removed. A failed removal is left to a later
// push: pruning never fails a push that was written.
func pruneHistory(ctx context.Context, st store.Store, rev, keep int64) {
	oldest := rev - keep // the newest revision that falls out
	if oldest < 1 {
		return
	}
	low := oldest
	if rev%32 == 0 {
		low = max(1, oldest-64)
	}
	for r := oldest; r >= low; r-- {
		_ = store.Forget(ctx, st, store.HistoryKey(r))
	}
}

// Back-off of Update between conflicting attempts: the first wait is about
// updateFirstWait and each next one doubles up to updateMaxWait. Every wait
// is jittered (half to one and a half times), so writers that collided once
// do not collide again in step.
const (
	updateFirstWait = time.Millisecond
	updateMaxWait   = 200 * time.Millisecond
)

// DefaultUpdateBound is how long Update keeps retrying conflicts when its
// context has no deadline of its own.
const DefaultUpdateBound = 2 * time.Minute

// Update is the one mutation path of the registry: read the current
// document (an empty store reads as Document{Version: 1}), apply fn to a
// deep copy, validate, and compare-and-swap. On a conflict it waits a
// jittered, growing back-off (from about 1ms up to 200ms) and runs fn again
// on a freshly read document, as often as it takes: there is no cap on
// attempts, so a writer under heavy contention is slow but still lands.
// Only the context ends the retries; when ctx has no deadline Update gives
// itself DefaultUpdateBound (two minutes). fn may run many times, so it
// must have no effect outside the document it is given.
//
// An error from fn is returned as it is and nothing is written; an invalid
// result returns a *ValidationError and nothing is written. When the
// context ends while conflicts continue, the error wraps both ctx.Err() and
// the last *ConflictError (errors.Is matches store.ErrConflict). Safe for
// concurrent use, also across processes sharing the store.
func Update(ctx context.Context, st store.Store, reason string, fn func(d *Document) error) (*Document, store.Meta, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultUpdateBound)
		defer cancel()
	}
	wait := updateFirstWait
	// conflicted says why the context ran out when it ends during a later
	// attempt's load or push: the earlier conflicts, not that step, are
	// what the caller needs to hear.
	var lastConflict error
	conflicted := func(attempt int, err error) error {
		if lastConflict == nil || ctx.Err() == nil || !errors.Is(err, ctx.Err()) {
			return err
		}
		return fmt.Errorf("update registry: %d attempts met a conflict: %w (last: %w)", attempt-1, ctx.Err(), lastConflict)
	}
	for attempt := 1; ; attempt++ {
		cur, meta, err := Load(ctx, st)
		switch {
		case errors.Is(err, store.ErrNotFound):
			cur, meta = &Document{Version: 1}, store.Meta{}
		case err != nil:
			return nil, store.Meta{}, conflicted(attempt, err)
		}
		next := cur.Clone()
		if err := fn(next); err != nil {
			return nil, store.Meta{}, err
		}
		m, err := Push(ctx, st, next, meta.Revision, reason)
		if err == nil || !errors.Is(err, store.ErrConflict) {
			if err != nil && m.Revision == 0 {
				return nil, store.Meta{}, conflicted(attempt, err)
			}
			return next, m, err
		}
		lastConflict = err
		t := time.NewTimer(wait/2 + mrand.N(wait))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, store.Meta{}, fmt.Errorf("update registry: %d attempts met a conflict: %w (last: %w)", attempt, ctx.Err(), err)
		case <-t.C:
		}
		wait = min(2*wait, updateMaxWait)
	}
}
