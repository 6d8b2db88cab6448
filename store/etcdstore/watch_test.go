package etcdstore

import (
	"context"
	"testing"
	"time"

	"github.com/wisent/stado/store"
	etcdtest "github.com/wisent/stado/tests/etcd"
)

// A watcher of the beacons hears a beacon's put and delete, and nothing of
// keys outside its prefix; its channel closes when its context ends.
func TestWatchNoticesChangesUnderItsPrefixOnly(t *testing.T) {
	c := etcdtest.Start(t, 1)
	st := openFresh(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := st.Watch(ctx, store.BeaconPrefix)
	if err != nil {
		t.Fatal(err)
	}
	heard := func(want bool, what string) {
		t.Helper()
		select {
		case <-ch:
			if !want {
				t.Fatalf("%s: a notice, want none", what)
			}
		case <-time.After(2 * time.Second):
			if want {
				t.Fatalf("%s: no notice within 2s", what)
			}
		}
	}
	time.Sleep(200 * time.Millisecond) // let the watch open
	if _, err := st.Put(ctx, "autonomy/lease", []byte("x"), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	heard(false, "a key outside the prefix")
	if _, err := st.Put(ctx, store.BeaconPrefix+"host1", []byte("{}"), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	heard(true, "a beacon's put")
	if err := st.Delete(ctx, store.BeaconPrefix+"host1"); err != nil {
		t.Fatal(err)
	}
	heard(true, "a beacon's delete")
	cancel()
	select {
	case _, open := <-ch:
		if open {
			t.Fatal("a notice after the context ended")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the channel stayed open after the context ended")
	}
}
