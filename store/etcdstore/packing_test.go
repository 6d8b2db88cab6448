package etcdstore

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/wisent/stado/store"
	etcdtest "github.com/wisent/stado/tests/etcd"
)

// A beacon-sized value is stored verbatim until the store's packing
// document turns packing on; from then on (for a writer that opened the
// store before, once its reading of the document is due again) it is
// stored packed and reads back as written; turned off, verbatim again. A
// short value and a large one keep their own encodings throughout.
func TestBeaconsArePackedOnlyWhileThePackingDocumentSaysSo(t *testing.T) {
	c := etcdtest.Start(t, 1)
	st := openFresh(t, c)
	ctx := context.Background()
	beacon := bytes.Repeat([]byte(`{"service":"svc00","unit":"svc00.service","state":"active","sub":"running"},`), 30)
	short := []byte(`{"kind":"stado.beacon"}`)
	put := func(key string, v []byte) []byte {
		t.Helper()
		if _, err := st.Put(ctx, key, v, store.PutOptions{TTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
		obj, err := st.Get(ctx, key)
		if err != nil || !bytes.Equal(obj.Value, v) {
			t.Fatalf("get %s: %d bytes, %v; want the %d written", key, len(obj.Value), err, len(v))
		}
		return rawGet(t, st, key).Kvs[0].Value
	}
	setPacking := func(on bool) {
		t.Helper()
		doc, _ := json.Marshal(store.Packing{Kind: store.PackingKind, Packed: on, At: time.Now()})
		if _, err := st.Put(ctx, store.PackingKey, doc, store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if raw := put("beacons/h1", beacon); !bytes.Equal(raw, beacon) {
		t.Fatalf("with no packing document the beacon was stored as %d bytes, want verbatim", len(raw))
	}
	setPacking(true)
	if raw := put("beacons/h1", beacon); !bytes.Equal(raw, beacon) {
		t.Fatal("a writer packed before its reading of the packing document was due")
	}
	st.packing.checked = time.Now().Add(-packingRecheck)
	raw := put("beacons/h1", beacon)
	if !bytes.HasPrefix(raw, []byte(valueMarker+"l")) || len(raw) > len(beacon)/3 {
		t.Fatalf("with packing on the beacon was stored as %d bytes starting %q, want packed", len(raw), raw[:min(len(raw), 16)])
	}
	if raw := put("beacons/h2", short); !bytes.Equal(raw, short) {
		t.Fatalf("a short value was stored as %q, want verbatim", raw)
	}
	list, err := st.List(ctx, "beacons/")
	if err != nil || len(list) != 2 || !bytes.Equal(list[0].Value, beacon) {
		t.Fatalf("List = %d objects, %v; want the packed beacon read back", len(list), err)
	}
	setPacking(false)
	if on, err := st.PacksValues(ctx); on || err != nil {
		t.Fatalf("PacksValues = %v, %v after turning packing off", on, err)
	}
	if raw := put("beacons/h1", beacon); !bytes.Equal(raw, beacon) {
		t.Fatal("with packing off again the beacon was still stored packed")
	}
	// a packing document of another kind is not obeyed
	if _, err := st.Put(ctx, store.PackingKey, []byte(`{"kind":"other","packed":true}`), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if on, err := st.PacksValues(ctx); on || err == nil {
		t.Fatalf("PacksValues = %v, %v for a document of another kind, want off and an error", on, err)
	}
}
