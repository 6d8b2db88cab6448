package registry_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

func TestWordsQuotesOnlyWhatNeedsIt(t *testing.T) {
	if got := registry.Words([]string{"/bin/sh", "-c", "echo $HOME", ""}); got != `/bin/sh -c "echo $HOME" ""` {
		t.Errorf("words: %s", got)
	}
}

func TestResultsSayThemselvesInLines(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	d := &registry.Document{Version: 1, Targets: []registry.Target{{Name: "h1", OS: registry.OSLinux, Services: []registry.Service{
		{Name: "brama", Unit: "brama.service", Program: "/usr/bin/brama"},
		{Name: "old", Unit: "old.service", UnitPath: "/etc/systemd/system/old.service", IncompleteReason: "adopted by hand"},
	}}}}
	cases := []struct {
		name      string
		got, want []string
	}{
		// a first push lists what it adds; a repeat says nothing changed
		{"first push", registry.Pushed{Revision: 1, Change: registry.Change{TargetsAdded: []string{"h1", "h2"}, ResolverChanged: true}}.Lines(),
			[]string{"pushed registry revision 1 (first revision)", "  targets added:     h1, h2", "  service_resolver changed"}},
		{"dry run", registry.Pushed{DryRun: true, Revision: 4, PreviousRevision: 4}.Lines(),
			[]string{"dry run: valid; registry stays at revision 4", "  no change"}},
		// show aligns each target's services and flags the incomplete one
		{"show", registry.Show(d, store.Meta{Revision: 2, Writer: "ops@h0", Time: at}).Lines(), []string{
			"registry revision 2", "  writer  ops@h0", "  time    2030-01-02T03:04:05Z",
			"", "targets (1):",
			"  h1       root@h1:22     linux",
			"    brama  brama.service  system  /usr/bin/brama",
			"    old    old.service    system  declaration_incomplete (adopted by hand)",
			"", "directory (0):",
			"", "1 declaration(s) incomplete: they name a unit but no program, so they cannot be reinstalled"}},
		// validate counts and names the declaration that cannot be reinstalled
		{"validate", registry.Tally("f.yaml", d).Lines(),
			[]string{"f.yaml: valid (1 targets, 2 services, 0 directory entries)", "  h1/old: declaration_incomplete (no program; cannot be reinstalled)"}},
	}
	for _, c := range cases {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s:\n%q\nwant\n%q", c.name, c.got, c.want)
		}
	}
	h := registry.NewestFirst([]store.Meta{{Revision: 1}, {Revision: 2, Time: at, Writer: "w", Reason: "why"}})
	if header, rows := h.Table(); len(header) != 4 || !reflect.DeepEqual(rows[0], []string{"2", "2030-01-02T03:04:05Z", "w", "why"}) || len(rows) != 2 {
		t.Errorf("history %q %q", header, rows)
	}
	if e := registry.NewestFirst(nil); e.Revisions == nil {
		t.Error("no history is a nil list")
	}
}
