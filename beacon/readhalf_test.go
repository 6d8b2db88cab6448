package beacon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

// wideFleet is n targets of three services each, every one with a fresh
// beacon reporting them active.
func wideFleet(t *testing.T, n int) (store.Store, *registry.Document) {
	t.Helper()
	d := &registry.Document{Version: 1}
	for i := 0; i < n; i++ {
		tg := registry.Target{Name: fmt.Sprintf("h%04d", i), SSH: registry.SSH{Address: fmt.Sprintf("10.0.%d.%d", i/256, i%256)}, OS: "linux"}
		for _, s := range []string{"a", "b", "c"} {
			tg.Services = append(tg.Services, registry.Service{Name: s, Unit: s + ".service", Program: "/usr/bin/" + s})
		}
		d.Targets = append(d.Targets, tg)
	}
	st := newStore(t)
	if _, err := registry.Push(context.Background(), st, d, 0, "test"); err != nil {
		t.Fatal(err)
	}
	for _, tg := range d.Targets {
		b := Beacon{Host: tg.Name, Pass: 1, At: t0.Add(-time.Second), IntervalSeconds: 5, StaleAfterSeconds: 15}
		for _, s := range tg.Services {
			b.Units = append(b.Units, UnitReport{Service: s.Name, Unit: s.Unit, State: StateActive, PID: 9})
		}
		publish(t, st, b)
	}
	return st, d
}

// Doctor and Health join each declared target with its beacon once, so
// their work grows with the fleet, not with its square; one host's rows,
// health or answers join that host alone.
func TestDoctorAndHealthJoinEachTargetOnce(t *testing.T) {
	for _, n := range []int{10, 100} {
		st, _ := wideFleet(t, n)
		v, err := LoadView(context.Background(), st, t0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name string
			call func()
			want int
		}{
			{"Doctor", func() { v.Doctor() }, n},
			{"Health of every host", func() { v.Health("") }, n},
			{"Health of one host", func() { v.Health("h0003") }, 1},
			{"Rows of every host", func() { v.Rows("") }, n},
			{"Rows of one host", func() { v.Rows("h0003") }, 1},
			{"Answers", func() { v.Answers("a", "h0003") }, 1},
		} {
			v.joins = 0
			tc.call()
			if v.joins != tc.want {
				t.Errorf("%d hosts: %s joined %d targets, want %d", n, tc.name, v.joins, tc.want)
			}
		}
		if f := v.Doctor(); len(f) != 0 {
			t.Errorf("%d hosts: a healthy fleet has findings %v", n, f)
		}
	}
}

// A beacon reporting many units finds each declaration's report as a
// short one does: the first report of a service and unit.
func TestManyReportsJoinAsAFewDo(t *testing.T) {
	var reps []UnitReport
	for i := 0; i < 3*scanReportsAtMost; i++ {
		reps = append(reps, UnitReport{Service: fmt.Sprintf("s%d", i), Unit: fmt.Sprintf("s%d.service", i), State: StateActive, PID: i})
	}
	reps = append(reps, UnitReport{Service: "s5", Unit: "s5.service", State: StateFailed}) // a repeat: the first wins
	big, small := indexReports(reps), reportIndex{reps: reps}
	for _, s := range []declared{{Name: "s5", Unit: "s5.service"}, {Name: "s70", Unit: "s70.service"}, {Name: "s5", Unit: "other.service"}, {Name: "zz", Unit: "zz.service"}} {
		b, sm := big.find(s), small.find(s)
		if (b == nil) != (sm == nil) || (b != nil && b != sm) {
			t.Errorf("%s/%s: indexed %v, scanned %v", s.Name, s.Unit, b, sm)
		}
	}
}

// A selection reads only the beacons it selects: a broken beacon of a host
// left out is never decoded, so it is not even reported unreadable.
func TestSelectionLeavesOtherHostsBeaconsUndecoded(t *testing.T) {
	for _, n := range []int{5, selectedAtMost + 8} { // one Get per host, and one visit of the prefix
		st, d := wideFleet(t, n)
		for _, tg := range d.Targets[1:] {
			if _, err := st.Put(context.Background(), store.BeaconPrefix+tg.Name, []byte("{not a beacon"), store.PutOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		first := d.Targets[0].Name
		for _, tc := range []struct {
			name string
			sel  Selection
		}{
			{"by host", Selection{Host: first}},
			{"by target", Selection{Targets: func(tg *registry.Target) bool { return tg.Name == first }}},
		} {
			v, err := LoadSelected(context.Background(), st, t0, 0, tc.sel)
			if err != nil {
				t.Fatal(err)
			}
			if len(v.Unreadable) != 0 || len(v.Beacons) != 1 || v.Beacons[first] == nil {
				t.Errorf("%d hosts, %s: beacons %d, unreadable %v", n, tc.name, len(v.Beacons), v.Unreadable)
			}
			if rows := v.Rows(first); len(rows) != 3 || rows[0].State != StateActive {
				t.Errorf("%d hosts, %s: rows %+v", n, tc.name, rows)
			}
		}
		v, err := LoadSelected(context.Background(), st, t0, 0, Selection{Targets: func(tg *registry.Target) bool { return tg.Name != first }})
		if err != nil {
			t.Fatal(err)
		}
		if len(v.Unreadable) != n-1 || len(v.Beacons) != 0 {
			t.Errorf("%d hosts, all but the first: beacons %d, unreadable %d", n, len(v.Beacons), len(v.Unreadable))
		}
	}
}

// The validated-registry cache is used only for the very bytes it
// validated: a registry changed in the store is validated again, and a
// cache file that is garbage is ignored and replaced.
func TestRegistryCacheTrustsOnlyTheBytesItValidated(t *testing.T) {
	ctx := context.Background()
	st := seeded(t)
	cache := &RegistryCache{Dir: filepath.Join(t.TempDir(), "stado"), Store: "etcd://user:secret@127.0.0.1:2379/p"}
	doc, meta, err := LoadValidated(ctx, st, cache)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := os.ReadFile(cache.path())
	if err != nil {
		t.Fatalf("no cache written: %v", err)
	}
	if fi, _ := os.Stat(cache.path()); fi.Mode().Perm() != 0o600 {
		t.Errorf("cache file mode %v, want 0600", fi.Mode().Perm())
	}
	if bytes.Contains(rec, []byte("secret")) || bytes.Contains(rec, []byte("127.0.0.1")) {
		t.Errorf("cache file names the store: %q", rec)
	}
	// a hit reads the same document
	doc2, meta2, err := LoadValidated(ctx, st, cache)
	if err != nil || meta2 != meta || len(doc2.Targets) != len(doc.Targets) {
		t.Fatalf("hit: %v %+v", err, meta2)
	}

	// The store is changed behind stado's back: an invalid document at a
	// new revision is validated, and refused, whatever the cache holds.
	obj, err := st.Get(ctx, store.RegistryKey)
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Replace(obj.Value, []byte(`"host2"`), []byte(`"host1"`), 1) // two targets named host1
	if bytes.Equal(bad, obj.Value) {
		t.Fatal("no target host2 to rename")
	}
	if _, err := st.Put(ctx, store.RegistryKey, bad, store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	var verr *registry.ValidationError
	if _, _, err := LoadValidated(ctx, st, cache); !errors.As(err, &verr) {
		t.Fatalf("changed registry: %v, want a validation error", err)
	}
	// The cache is the user's own: a record of exactly these bytes is
	// taken as their validation (this is what a hit saves).
	badObj, _ := st.Get(ctx, store.RegistryKey)
	if err := os.WriteFile(cache.path(), cache.record(badObj), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadValidated(ctx, st, cache); err != nil {
		t.Fatalf("recorded bytes: %v", err)
	}
	// ... but not for another store naming the same bytes
	other := &RegistryCache{Dir: cache.Dir, Store: "file:///elsewhere"}
	if err := os.WriteFile(other.path(), bytes.Replace(cache.record(badObj), []byte(cache.storeID()), []byte(other.storeID()), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadValidated(ctx, st, &RegistryCache{Dir: cache.Dir, Store: "file:///third"}); !errors.As(err, &verr) {
		t.Fatalf("a store without a record: %v, want a validation error", err)
	}

	// garbage in the cache file is a miss, and the next good load replaces it
	if _, err := st.Put(ctx, store.RegistryKey, obj.Value, store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cache.path(), []byte("\x00garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadValidated(ctx, st, cache); err != nil {
		t.Fatal(err)
	}
	if rec, _ := os.ReadFile(cache.path()); !strings.HasPrefix(string(rec), cacheMagic+" ") {
		t.Errorf("cache not replaced: %q", rec)
	}
	// a cache that cannot be written changes nothing but speed
	if _, _, err := LoadValidated(ctx, st, &RegistryCache{Dir: "/proc/no-such-dir/stado", Store: "x"}); err != nil {
		t.Errorf("unwritable cache: %v", err)
	}
}

// With the registry's validation cached, a rows-only read decodes only
// what the join reads and answers as the whole document does.
func TestRowsOnlyReadAnswersAsTheWholeDocument(t *testing.T) {
	ctx := context.Background()
	st := seeded(t)
	cache := &RegistryCache{Dir: t.TempDir(), Store: "file:///seeded"}
	whole, err := LoadSelected(ctx, st, t0, 0, Selection{Cache: cache}) // validates, records
	if err != nil {
		t.Fatal(err)
	}
	slim, err := LoadSelected(ctx, st, t0, 0, Selection{Cache: cache, RowsOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if whole.Document == nil || slim.Document != nil {
		t.Fatalf("documents: whole %v, rows-only %v", whole.Document != nil, slim.Document != nil)
	}
	if whole.Meta != slim.Meta {
		t.Errorf("meta %+v, rows-only %+v", whole.Meta, slim.Meta)
	}
	same := func(what string, a, b any) {
		t.Helper()
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if !bytes.Equal(ja, jb) {
			t.Errorf("%s:\n whole     %s\n rows-only %s", what, ja, jb)
		}
	}
	same("rows", whole.Rows(""), slim.Rows(""))
	same("rows of host1", whole.Rows("host1"), slim.Rows("host1"))
	same("undeclared", whole.Undeclared(""), slim.Undeclared(""))
	same("health", whole.Health(""), slim.Health(""))
	same("doctor", whole.Doctor(), slim.Doctor())
	if !slim.Declares("host3") || slim.Declares("host9") {
		t.Error("Declares is wrong")
	}
	// without a record of these bytes a rows-only read decodes and
	// validates the whole document
	fresh, err := LoadSelected(ctx, st, t0, 0, Selection{Cache: &RegistryCache{Dir: t.TempDir(), Store: "x"}, RowsOnly: true})
	if err != nil || fresh.Document == nil {
		t.Fatalf("miss: %v", err)
	}
}
