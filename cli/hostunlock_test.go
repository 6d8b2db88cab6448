package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wisent/stado/safefile"
	"github.com/wisent/stado/store"
)

// unlock-store judges the store's lock files: a free one is listed and
// kept, a live one named with --key is refused naming its holder, and
// nothing happens without --stale. (A stale lock, held by an orphan after
// its holder died, is removed: safefile's tests and the unlock-store
// journey prove that on real processes.)
func TestHostUnlockStoreKeepsFreeAndLiveLocksAndRefusesANamedLiveOne(t *testing.T) {
	dir := t.TempDir()
	st, err := store.OpenFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Put(context.Background(), "releases/a", []byte("x"), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runRegistryCLI(t, dir, "host", "unlock-store")
	if code != ExitUsage || !strings.Contains(errOut, "--stale") {
		t.Fatalf("without --stale: exit %d %s", code, errOut)
	}
	code, out, errOut := runRegistryCLI(t, dir, "host", "unlock-store", "--stale", "--json")
	var d store.Unlocking
	if decodeDoc(t, out, "stado.host.unlock-store", &d); code != 0 || len(d.Locks) != 1 || d.Locks[0].Key != "releases/a" ||
		d.Locks[0].State != safefile.LockFree || d.Locks[0].Removed || d.Removed != 0 {
		t.Fatalf("free lock: exit %d %s %s", code, out, errOut)
	}
	unlock, err := safefile.Lock(context.Background(), filepath.Join(dir, ".lock~releases~a"))
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	code, out, _ = runRegistryCLI(t, dir, "host", "unlock-store", "--stale")
	if code != 0 || !strings.Contains(out, "which runs") || !strings.Contains(out, "removed 0 stale lock(s), kept 1") {
		t.Fatalf("live lock in a sweep: exit %d %s", code, out)
	}
	code, _, errOut = runRegistryCLI(t, dir, "host", "unlock-store", "--stale", "--key", "releases/a", "--json")
	if code != ExitRefused || !strings.Contains(errOut, `"held"`) || !strings.Contains(errOut, "pid ") {
		t.Fatalf("named live lock: exit %d %s", code, errOut)
	}
}
