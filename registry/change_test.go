package registry_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

func TestPushChangeDiffsWritesAndChecksTheExpectedRevision(t *testing.T) {
	ctx := context.Background()
	st := openFileStore(t)
	one := &registry.Document{Version: 1, Targets: []registry.Target{{Name: "h1", OS: registry.OSLinux}}}
	// a dry run on an empty store shows the change and writes nothing
	res, err := registry.PushChange(ctx, st, one, -1, "try", true)
	if err != nil || !res.DryRun || res.Revision != 0 || len(res.Change.TargetsAdded) != 1 {
		t.Fatalf("dry run: %+v %v", res, err)
	}
	if _, _, err := registry.Load(ctx, st); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("dry run wrote: %v", err)
	}
	// expect -1: the revision read just before
	res, err = registry.PushChange(ctx, st, one, -1, "first", false)
	if err != nil || res.Revision == 0 || res.PreviousRevision != 0 || res.Meta == nil || res.Meta.Reason != "first" {
		t.Fatalf("push: %+v %v", res, err)
	}
	// a stale expectation is a conflict, written or dry
	for _, dry := range []bool{false, true} {
		var ce *store.ConflictError
		if _, err := registry.PushChange(ctx, st, one, 0, "stale", dry); !errors.As(err, &ce) || ce.Got != res.Revision {
			t.Errorf("dry %v: %v, want a conflict at %d", dry, err, res.Revision)
		}
	}
	// an invalid document is refused, dry or not
	bad := &registry.Document{Version: 9}
	for _, dry := range []bool{false, true} {
		var ve *registry.ValidationError
		if _, err := registry.PushChange(ctx, st, bad, -1, "bad", dry); !errors.As(err, &ve) {
			t.Errorf("dry %v: %v, want a validation error", dry, err)
		}
	}
}

// TestPushingTheSameDocumentWritesNoRevision: a push of the document the
// store already holds writes nothing, says unchanged, and still checks the
// expected revision.
func TestPushingTheSameDocumentWritesNoRevision(t *testing.T) {
	ctx := context.Background()
	st := openFileStore(t)
	one := &registry.Document{Version: 1, Targets: []registry.Target{{Name: "h1", OS: registry.OSLinux}}}
	same := &registry.Document{Version: 1, Targets: []registry.Target{{Name: "h1", OS: registry.OSLinux}}}
	res, err := registry.PushChange(ctx, st, one, -1, "first", false)
	if err != nil {
		t.Fatal(err)
	}
	again, err := registry.PushChange(ctx, st, same, res.Revision, "again", false)
	if err != nil || !again.Unchanged || again.Meta != nil || again.Revision != res.Revision {
		t.Fatalf("again: %+v %v", again, err)
	}
	if _, meta, err := registry.Load(ctx, st); err != nil || meta.Revision != res.Revision {
		t.Fatalf("store at %d (%v), want %d", meta.Revision, err, res.Revision)
	}
	if lines := again.Lines(); len(lines) != 1 || !strings.Contains(lines[0], "no change") {
		t.Fatalf("lines %q", lines)
	}
	var ce *store.ConflictError
	if _, err := registry.PushChange(ctx, st, one, res.Revision+1, "stale", false); !errors.As(err, &ce) {
		t.Fatalf("unchanged against a wrong revision: %v, want a conflict", err)
	}
}
