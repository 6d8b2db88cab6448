package registry_test

import (
	"context"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

func releasesDoc(t *testing.T) *registry.Document {
	t.Helper()
	data, err := os.ReadFile("testdata/good/releases.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d, err := registry.ReadDocument(data, "releases.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A target's own entry wins over the top level; a target without one, and
// the top level itself (target ""), read the top level.
func TestDeclaredReleaseOfATargetOverridesTheTopLevel(t *testing.T) {
	d := releasesDoc(t)
	for _, c := range []struct {
		target, product string
		want            registry.ReleaseDecl
		ok              bool
	}{
		{"host3", "brama", registry.ReleaseDecl{Version: "1.4.2", Pin: true}, true}, // the override
		{"host1", "brama", registry.ReleaseDecl{Version: "1.4.3"}, true},            // the fleet-wide entry
		{"", "stado", registry.ReleaseDecl{Version: "0.2.0-rc.1+build.7", Pin: true}, true},
		{"host1", "tilde", registry.ReleaseDecl{}, false},                 // declared nowhere
		{"nosuch", "brama", registry.ReleaseDecl{Version: "1.4.3"}, true}, // unknown target: the top level
	} {
		got, ok := d.DeclaredRelease(c.target, c.product)
		if got != c.want || ok != c.ok {
			t.Errorf("DeclaredRelease(%q, %q) = %+v %v, want %+v %v", c.target, c.product, got, ok, c.want, c.ok)
		}
	}
	if got := d.DeclaredVersions("brama"); !reflect.DeepEqual(got, []string{"1.4.2", "1.4.3"}) {
		t.Errorf("DeclaredVersions(brama) = %v", got)
	}
}

// SetRelease sets, overrides and clears one entry, says whether the
// document changed, and refuses an unknown target with not_found.
func TestSetReleaseChangesOneEntryAndSaysWhetherItChanged(t *testing.T) {
	d := releasesDoc(t)
	if changed, err := d.SetRelease("", "brama", &registry.ReleaseDecl{Version: "1.4.3"}); changed || err != nil {
		t.Fatalf("setting the declared value again: changed %v, %v", changed, err)
	}
	if changed, err := d.SetRelease("host1", "brama", &registry.ReleaseDecl{Version: "1.5.0"}); !changed || err != nil {
		t.Fatalf("override on host1: changed %v, %v", changed, err)
	}
	if r, _ := d.DeclaredRelease("host1", "brama"); r.Version != "1.5.0" {
		t.Fatalf("host1 reads %+v after the override", r)
	}
	if changed, err := d.SetRelease("host3", "brama", nil); !changed || err != nil {
		t.Fatalf("clearing host3's override: changed %v, %v", changed, err)
	}
	if d.Targets[2].Releases != nil {
		t.Fatalf("an emptied override map stays: %v", d.Targets[2].Releases)
	}
	if changed, _ := d.SetRelease("host3", "brama", nil); changed {
		t.Fatal("clearing an absent entry reports a change")
	}
	if _, err := d.SetRelease("nosuch", "brama", &registry.ReleaseDecl{Version: "1"}); !refusal.Is(err, refusal.NotFound) {
		t.Fatalf("unknown target: %v, want not_found", err)
	}
}

// A declared-version change is its own line of a push's change, and a
// clone's releases are its own.
func TestDiffNamesChangedReleasesAndCloneCopiesThem(t *testing.T) {
	old := releasesDoc(t)
	next := old.Clone()
	next.Releases["brama"] = registry.ReleaseDecl{Version: "2.0.0"}
	delete(next.Targets[2].Releases, "brama")
	if old.Releases["brama"].Version != "1.4.3" || old.Targets[2].Releases["brama"].Version != "1.4.2" {
		t.Fatal("changing the clone's releases changed the source")
	}
	c := registry.Diff(old, next)
	if !reflect.DeepEqual(c.ReleasesChanged, []string{"brama", "host3/brama"}) || len(c.TargetsChanged) != 0 || c.Empty() {
		t.Fatalf("change = %+v", c)
	}
	lines := strings.Join(registry.Pushed{Revision: 2, PreviousRevision: 1, Change: c}.Lines(), "\n")
	if !strings.Contains(lines, "releases changed:  brama, host3/brama") {
		t.Fatalf("push lines do not name the releases:\n%s", lines)
	}
}

// registry show names the fleet-wide and per-target versions.
func TestShowListsDeclaredVersions(t *testing.T) {
	d := releasesDoc(t)
	out := strings.Join(registry.Show(d, store.Meta{Revision: 3}).Lines(), "\n")
	for _, want := range []string{"releases (2):", "brama 1.4.3", "stado 0.2.0-rc.1+build.7 (pinned)", "release brama 1.4.2 (pinned)"} {
		if !strings.Contains(out, want) {
			t.Errorf("show does not say %q:\n%s", want, out)
		}
	}
}

// A version written through Update is a revision of the history with its
// reason; an invalid one is refused at its exact path and writes nothing.
func TestDeclaredVersionsAreWrittenThroughUpdate(t *testing.T) {
	st, err := store.OpenFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	if _, err := registry.Push(ctx, st, releasesDoc(t), 0, "first"); err != nil {
		t.Fatal(err)
	}
	_, m, err := registry.Update(ctx, st, "brama 1.5.0", func(d *registry.Document) error {
		_, err := d.SetRelease("", "brama", &registry.ReleaseDecl{Version: "1.5.0"})
		return err
	})
	if err != nil || m.Reason != "brama 1.5.0" {
		t.Fatalf("update: %+v %v", m, err)
	}
	_, _, err = registry.Update(ctx, st, "bad", func(d *registry.Document) error {
		_, err := d.SetRelease("host2", "brama", &registry.ReleaseDecl{Version: "1 0"})
		return err
	})
	if !refusal.Is(err, refusal.Validation) || !strings.Contains(err.Error(), "targets[1].releases.brama.version") {
		t.Fatalf("invalid version: %v, want a validation refusal at targets[1].releases.brama.version", err)
	}
	h, err := registry.History(ctx, st)
	if err != nil || len(h) != 2 || h[1].Reason != "brama 1.5.0" {
		t.Fatalf("history = %+v, %v", h, err)
	}
}
