package release_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/release"
)

// A file to publish is read whole; one over the bound is refused by its
// size before it is read (a sparse file: nothing of it is written), and a
// missing one names its path.
func TestReadImageRefusesAFileOverTheBoundBeforeReadingIt(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	if err := os.WriteFile(small, []byte("image"), 0o644); err != nil {
		t.Fatal(err)
	}
	if data, err := release.ReadImage(small); err != nil || !bytes.Equal(data, []byte("image")) {
		t.Fatalf("%q %v, want the file's bytes", data, err)
	}
	huge := filepath.Join(dir, "huge")
	if err := os.WriteFile(huge, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, release.MaxImageBytes+1); err != nil {
		t.Fatal(err)
	}
	if _, err := release.ReadImage(huge); !refusal.Is(err, refusal.ContentTooLarge) {
		t.Fatalf("%v, want content_too_large", err)
	}
	missing := filepath.Join(dir, "missing")
	if _, err := release.ReadImage(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("%v, want an error naming %s", err, missing)
	}
}
