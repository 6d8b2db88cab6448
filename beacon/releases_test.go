package beacon

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/release"
	"github.com/wisent/stado/store"
)

// Each pass carries the host's release images from its state file: per
// product the active image, the backup and the last activation, as
// published under beacons/<host>.
func TestAPassCarriesTheHostsActiveAndBackupImages(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	st := release.HostState{Products: map[string]release.ProductState{
		"brama": {
			Active: &release.Image{Product: "brama", Version: "1.4.3", SHA256: "aa", Path: "/x"},
			Backup: &release.Image{Product: "brama", Version: "1.4.2", SHA256: "bb", Path: "/y"},
			Last:   &release.Activation{Product: "brama", Version: "1.4.3", SHA256: "aa", At: at, Outcome: release.OutcomeActivated, PIDAfter: 812},
		},
	}}
	if err := release.WriteHostState(root, st); err != nil {
		t.Fatal(err)
	}
	s, err := store.OpenFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{Host: "h1", Store: s, Observer: staticObserver{}, ReleaseRoot: root, Now: func() time.Time { return at }}
	if _, err := r.RunPass(ctx); err != nil {
		t.Fatal(err)
	}
	o, err := s.Get(ctx, store.BeaconPrefix+"h1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := DecodeBeacon("h1", o.Value)
	if err != nil {
		t.Fatal(err)
	}
	got := b.Releases.Product("brama")
	if b.Releases.State != ReleasesRead || got == nil {
		t.Fatalf("releases %+v", b.Releases)
	}
	if *got.Active != (ReleaseImage{"1.4.3", "aa"}) || *got.Backup != (ReleaseImage{"1.4.2", "bb"}) {
		t.Errorf("active %+v backup %+v", got.Active, got.Backup)
	}
	if got.Last == nil || got.Last.Outcome != release.OutcomeActivated || got.Last.PID != 812 || !got.Last.At.Equal(at) {
		t.Errorf("last %+v", got.Last)
	}
}

// A state file that cannot be read is carried as unreadable with its
// reason: the pass still publishes, and no image is guessed.
func TestAnUnreadableReleaseStateIsCarriedWithItsReason(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	if err := os.WriteFile(release.StateFile(root), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := store.OpenFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{Host: "h1", Store: s, Observer: staticObserver{}, ReleaseRoot: root}
	b, err := r.RunPass(ctx)
	if err != nil {
		t.Fatalf("the pass failed on an unreadable release state: %v", err)
	}
	if b.Releases == nil || b.Releases.State != ReleasesUnreadable || !strings.Contains(b.Releases.Cause, release.StateFile(root)) || len(b.Releases.Products) != 0 {
		t.Fatalf("releases %+v, want unreadable naming the file", b.Releases)
	}
}

// No release directory configured: the beacon has no releases block; a
// directory without a state file reads as no product installed.
func TestNoStateFileReadsAsNoImages(t *testing.T) {
	if got := ReadReleases(t.TempDir()); got.State != ReleasesRead || len(got.Products) != 0 {
		t.Fatalf("%+v", got)
	}
	r := &Runner{Host: "h1", Store: mustFileStore(t), Observer: staticObserver{}}
	b, _ := r.RunPass(context.Background())
	if b.Releases != nil {
		t.Fatalf("releases %+v without a release root", b.Releases)
	}
}

// However large the state file a host holds, the block stays bounded:
// MaxReleaseProducts products (the rest counted), texts cut.
func TestTheReleasesBlockIsBounded(t *testing.T) {
	st := release.HostState{Products: map[string]release.ProductState{}}
	for i := 0; i < MaxReleaseProducts+10; i++ {
		st.Products[fmt.Sprintf("p%03d", i)] = release.ProductState{
			Last: &release.Activation{Version: "1", Outcome: release.OutcomeRestored, Refusal: strings.Repeat("é", MaxReleaseText)}}
	}
	got := ReleasesOf(st, nil)
	if len(got.Products) != MaxReleaseProducts || got.Omitted != 10 || got.Products[0].Product != "p000" {
		t.Fatalf("%d products, %d omitted, first %q", len(got.Products), got.Omitted, got.Products[0].Product)
	}
	if r := got.Products[0].Last.Refusal; len(r) > MaxReleaseText+len("…") || !strings.HasSuffix(r, "…") || !strings.HasPrefix(r, "éé") {
		t.Fatalf("refusal of %d bytes: %q", len(r), r[len(r)-8:])
	}
}

func mustFileStore(t *testing.T) store.Store {
	t.Helper()
	s, err := store.OpenFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}
