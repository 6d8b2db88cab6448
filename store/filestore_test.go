package store_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wisent/stado/store"
	"github.com/wisent/stado/store/storetest"
)

func openFileStore(t *testing.T) *store.FileStore {
	t.Helper()
	st, err := store.OpenFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestFileStorePassesConformanceSuite(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openFileStore(t) })
}

func TestOpenFileURLNamesFileStore(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(context.Background(), "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	fs, ok := st.(*store.FileStore)
	if !ok || fs.Dir() != dir {
		t.Fatalf("Open file://%s = %T %v", dir, st, st)
	}
}

func TestOpenFileURLRefusesRelativeDirectory(t *testing.T) {
	if _, err := store.Open(context.Background(), "file://relative/dir"); err == nil {
		t.Fatal("relative file store directory accepted")
	}
}

func TestFileStoreKeepsOneFilePerKeyWithSafeNames(t *testing.T) {
	st := openFileStore(t)
	ctx := context.Background()
	// Keys whose segments would be unsafe as file names if copied verbatim.
	keys := []string{"registry/document", ".hidden/x", "a~b/c%d", "sp ace/ü"}
	for _, k := range keys {
		if _, err := st.Put(ctx, k, []byte(k), store.PutOptions{}); err != nil {
			t.Fatalf("Put %q: %v", k, err)
		}
	}
	entries, err := os.ReadDir(st.Dir())
	if err != nil {
		t.Fatal(err)
	}
	var data []string
	for _, e := range entries {
		if strings.ContainsAny(e.Name(), "/ \x00") {
			t.Errorf("unsafe file name %q", e.Name())
		}
		if !strings.HasPrefix(e.Name(), ".") {
			data = append(data, e.Name())
		}
	}
	if len(data) != len(keys) {
		t.Fatalf("data files %v, want one per key (%d)", data, len(keys))
	}
	objs, err := st.List(ctx, "")
	if err != nil || len(objs) != len(keys) {
		t.Fatalf("List = %v, %v", objs, err)
	}
	for _, o := range objs {
		if string(o.Value) != o.Key {
			t.Errorf("key %q came back with value %q", o.Key, o.Value)
		}
	}
}

func TestFileStoreIgnoresLeftoverTemporaryFiles(t *testing.T) {
	st := openFileStore(t)
	ctx := context.Background()
	if _, err := st.Put(ctx, "k", []byte("v"), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	// A writer killed between create and rename leaves a temporary file.
	if err := os.WriteFile(filepath.Join(st.Dir(), ".tmp~k~deadbeef"), []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	objs, err := st.List(ctx, "")
	if err != nil || len(objs) != 1 || string(objs[0].Value) != "v" {
		t.Fatalf("List = %v, %v; want only k", objs, err)
	}
}

func TestFileStoreRefusesCorruptObjectFile(t *testing.T) {
	st := openFileStore(t)
	ctx := context.Background()
	if _, err := st.Put(ctx, "k", []byte("value"), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(st.Dir(), "k")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	// Cases: truncated value, flipped byte, no header at all.
	for name, bad := range map[string][]byte{
		"truncated": b[:len(b)-2],
		"flipped":   append(append([]byte{}, b[:len(b)-1]...), 'X'),
		"noheader":  []byte("value"),
	} {
		if err := os.WriteFile(p, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := st.Get(ctx, "k")
		if err == nil || errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), "corrupt") {
			t.Errorf("%s: Get err = %v, want a corrupt-object error", name, err)
		}
		// a visit stops at it too, naming the file
		err = st.Visit(ctx, "", 2, func(store.Object) {})
		if err == nil || !strings.Contains(err.Error(), "corrupt") || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: Visit err = %v, want a corrupt-object error naming %s", name, err, p)
		}
	}
}
