package safefile_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wisent/stado/safefile"
)

func TestWriteReplacesAndLeavesNoTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.service")
	for i, content := range []string{"a\n", "b\n"} {
		if err := safefile.Write(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(path); string(got) != content {
			t.Fatalf("write %d: got %q", i, got)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("directory holds %d entries, want 1", len(entries))
	}
}

func TestWriteGivesTheFileItsMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secret")
	if err := safefile.Write(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v; want 0600", st.Mode(), err)
	}
}

func TestWriteIntoMissingDirectoryFailsAndNamesThePath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "x")
	err := safefile.Write(path, []byte("a"), 0o644)
	if err == nil || !strings.Contains(err.Error(), path) || !os.IsNotExist(unwrapAll(err)) {
		t.Fatalf("Write into a missing directory = %v, want a not-exist error naming %s", err, path)
	}
}

// A failed rename (the target is a non-empty directory) leaves no
// temporary file behind and the target untouched.
func TestWriteRemovesTheTemporaryFileOnError(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "taken")
	if err := os.MkdirAll(filepath.Join(target, "inside"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := safefile.Write(target, []byte("a"), 0o644); err == nil {
		t.Fatal("Write over a non-empty directory succeeded")
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), safefile.TempPrefix) {
			t.Fatalf("temporary file %s left behind", e.Name())
		}
	}
	if st, err := os.Stat(target); err != nil || !st.IsDir() {
		t.Fatalf("target changed: %v, %v", st, err)
	}
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok || u.Unwrap() == nil {
			return err
		}
		err = u.Unwrap()
	}
}
