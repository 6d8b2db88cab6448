package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/wisent/stado/store"
)

// Pushed is what PushChange did: the change d makes to the registry the
// store held, and the revision written.
type Pushed struct {
	DryRun bool `json:"dry_run"`
	// Revision is the new revision, or the current one on a dry run.
	Revision         int64       `json:"revision"`
	PreviousRevision int64       `json:"previous_revision"`
	Meta             *store.Meta `json:"meta,omitempty"`
	Change           Change      `json:"change"`
	// Unchanged is set when d equals the stored document: nothing was (or,
	// on a dry run, would be) written and Revision is the current one.
	Unchanged bool `json:"unchanged,omitempty"`
}

// PushChange is `registry push`: it diffs d against the current registry
// and writes it (Push) with a compare-and-swap against expect, or, when
// expect is negative, against the revision it read. With dryRun it writes
// nothing and only checks expect. A d equal to the stored document is not
// written either: the result says Unchanged, at the current revision. Errors: Push's (*ValidationError, one
// wrapping *store.ConflictError), a *store.ConflictError for a dry run against a
// revision the store does not hold, or store failures. When the document
// was written but its history entry was not, it returns the result with
// the error.
func PushChange(ctx context.Context, st store.Store, d *Document, expect int64, reason string, dryRun bool) (Pushed, error) {
	cur, meta, err := Load(ctx, st)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return Pushed{}, err
	}
	if expect < 0 {
		expect = meta.Revision
	}
	res := Pushed{DryRun: dryRun, Revision: meta.Revision, PreviousRevision: meta.Revision, Change: Diff(cur, d)}
	res.Unchanged = cur != nil && sameDocument(cur, d)
	if dryRun || res.Unchanged {
		if expect != meta.Revision {
			return Pushed{}, fmt.Errorf("push registry: %w", &store.ConflictError{Key: store.RegistryKey, Want: expect, Got: meta.Revision})
		}
		if err := Validate(d); err != nil {
			return Pushed{}, err
		}
		return res, nil
	}
	m, err := Push(ctx, st, d, expect, reason)
	if m.Revision == 0 {
		return Pushed{}, err
	}
	res.Revision, res.Meta = m.Revision, &m
	return res, err
}

// sameDocument reports whether a and b encode to the same bytes, the form
// Push stores.
func sameDocument(a, b *Document) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}
