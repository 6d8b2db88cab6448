package beacon

import (
	"encoding/json"
	"reflect"
	"testing"
)

// storedBeaconSeeds are beacons as hosts publish them, and as a hostile
// writer of the store might leave them.
var storedBeaconSeeds = []string{
	`{"kind":"stado.beacon","version":1,"host":"h","identity":{"hostname":"h.example","machine_id":"m","boot_id":"b","pid":7,"started":"2026-12-02T11:00:00Z"},"pass":3,"at":"2026-12-02T11:59:50.123456789Z","interval_seconds":15,"stale_after_seconds":45,"stado_version":"0.1.0","units":[{"service":"a","unit":"a.service","state":"active","sub":"running","pid":12,"starts":1,"last_exit":0,"last_stderr":"x\u001b[2J\n","answering":{"state":"finished","question":{"method":"GET","path":"/healthz","endpoint":"http://127.0.0.1:9000","repair":["restart"]},"finished":{"answered":{"status":200,"successful":true,"elapsed_ms":3,"at":"2026-12-02T11:59:48Z"}}}}],"undeclared":[{"unit":"x.service","state":"failed"}],"refusals":[{"code":"c","message":"m"}]}`,
	`{"KIND":"stado.beacon","Version":1,"host":"h","host":"i","units":[{"Service":"a","UNIT":"a.service","state":"active","pid":1e2}]}`,
	`{"kind":"stado.beacon","version":1,"host":"h","units":[{"pid":"12"}]}`,
	`{"kind":"stado.beacon","version":1,"host":"h","releases":{"state":"read","products":[{"product":"brama","active":{"version":"1.4.3","sha256":"aa"},"backup":{"version":"1.4.2","sha256":"bb"},"last":{"version":"1.4.3","outcome":"activated","at":"2026-12-02T11:59:00Z","pid":9}}]}}`,
	`{"kind":"stado.beacon","version":1,"host":"h","releases":{"state":"unreadable","cause":"release state x: not json","products":[{"product":7}]}}`,
	`{"kind":"stado.beacon","version":1,"host":"h","units":[{"pid":1.5}]}`,
	`{"kind":"stado.beacon","version":1,"host":"h\ud800\xff","at":"not a time"}`,
	`{"kind":"stado.beacon","version":1,"host":"h","units":null,"extra":{"deep":[[[[{}]]]]}}`,
	`{"kind":"stado.beacon","version":1,"host":"h"} {}`,
	`{"kind":"stado.beacon","version":1,"host":"h","units":[{"last_exit":99999999999999999999}]}`,
	`{"kind":"stado.beacon"`,
	`null`,
	``,
}

// The faster decoder reads a stored beacon as encoding/json does: the same
// beacon, and an error exactly where encoding/json has one.
func TestStoredBeaconsDecodeAsEncodingJSONDecodesThem(t *testing.T) {
	for _, s := range storedBeaconSeeds {
		assertBeaconDecodesAsStd(t, []byte(s))
	}
}

func assertBeaconDecodesAsStd(t *testing.T, value []byte) {
	t.Helper()
	got, gotErr := DecodeBeacon("h", value)
	var want Beacon
	var std *Beacon
	wantErr := json.Unmarshal(value, &want)
	if wantErr == nil {
		std, wantErr = checkDecoded("h", &want)
	}
	if (gotErr == nil) != (wantErr == nil) {
		t.Fatalf("%q: error %v, encoding/json's %v", value, gotErr, wantErr)
	}
	if wantErr == nil && !reflect.DeepEqual(got, std) {
		t.Fatalf("%q: decoded\n%+v\nencoding/json decoded\n%+v", value, got, std)
	}
}

// Hostile stored bytes never crash the reader, and decode as encoding/json
// decodes them.
func FuzzStoredBeaconDecodesAsEncodingJSON(f *testing.F) {
	for _, s := range storedBeaconSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, value []byte) { assertBeaconDecodesAsStd(t, value) })
}
