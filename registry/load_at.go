package registry

import (
	"context"
	"errors"
	"fmt"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/store"
)

// LoadAt loads the current registry (rev 0) or the retained revision rev;
// a store without it is refused (not_found) with the command that helps.
func LoadAt(ctx context.Context, st store.Store, rev int64) (*Document, store.Meta, error) {
	var d *Document
	var m store.Meta
	var err error
	msg, hint := "the store holds no registry yet", "push one: stado registry push FILE"
	if rev == 0 {
		d, m, err = Load(ctx, st)
	} else {
		d, m, err = LoadRevision(ctx, st, rev)
		msg, hint = fmt.Sprintf("registry revision %d is not retained", rev), "list the retained revisions: stado registry history"
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, m, &refusal.Error{Code: refusal.NotFound, Message: msg, Hint: hint, Err: err}
	}
	return d, m, err
}

// ConflictRefusal is the refusal (conflict) of a push whose expected
// revision the store does not hold, with both revisions as details.
func ConflictRefusal(ce *store.ConflictError) error {
	return &refusal.Error{
		Code:    "conflict",
		Message: fmt.Sprintf("the store holds registry revision %d, not the expected %d", ce.Got, ce.Want),
		Hint:    "pull the current revision, reapply the change and push with --expect-revision",
		Details: map[string]int64{"expected_revision": ce.Want, "store_revision": ce.Got},
		Err:     ce,
	}
}
