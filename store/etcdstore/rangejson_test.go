package etcdstore

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"
)

// rangeSeeds are answers as the gateway writes them and as it never does
// (escapes, nulls, unquoted numbers, names in another case, garbage).
var rangeSeeds = []string{
	`{"header":{"cluster_id":"14655024145418835072","member_id":"11046527456118344142","revision":"2","raft_term":"2"},"kvs":[{"key":"Zm9v","create_revision":"2","mod_revision":"2","version":"1","value":"YmFy"}],"count":"1"}`,
	`{"header":{"revision":"9"},"kvs":[{"key":"YQ==","mod_revision":"3","value":"","lease":"706680589827120905"},{"key":"Yg==","mod_revision":"4"}],"more":true,"count":"5"}`,
	`{"header":{"revision":"2"}}`,
	` { "header" : { "revision" : "7" } , "kvs" : [ ] , "more" : false } `,
	`{"header":{"revision":"2"},"kvs":null}`,
	`{"header":{"revision":2}}`,
	`{"Header":{"Revision":"3"},"KVS":[{"KEY":"YQ=="}]}`,
	`{"header":{"revision":"2"},"kvs":[{"key":"Zm9v\u0041"}]}`,
	`{"header":{"revision":"2"},"kvs":[{"key":"not base64!"}]}`,
	`{"header":{"revision":"2"},"extra":[1,2.5e3,{"a":[null,true,false,"x"]}],"kvs":[]}`,
	`{"header":{"revision":"2"}} trailing`,
	`{"header":{"revision":"99999999999999999999"}}`,
	`{"header":{"revision":"2"},"more":tru}`,
	`[]`,
	``,
}

// A range answer decodes to exactly what encoding/json makes of it, or
// fails where encoding/json fails.
func TestRangeAnswersDecodeAsEncodingJSONDoes(t *testing.T) {
	for _, in := range rangeSeeds {
		checkRangeDecode(t, []byte(in))
	}
}

func FuzzRangeAnswersDecodeAsEncodingJSONDoes(f *testing.F) {
	for _, in := range rangeSeeds {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkRangeDecode(t, in) })
}

func checkRangeDecode(t *testing.T, in []byte) {
	t.Helper()
	var want, got rangeResponse
	werr := json.Unmarshal(in, &want)
	gerr := decodeRange(in, &got)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("%q: decodeRange error %v, encoding/json error %v", in, gerr, werr)
	}
	if werr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n decodeRange   %+v\n encoding/json %+v", in, got, want)
	}
}

// BenchmarkDecodeRangePage decodes a page of 100 beacons (20 units each)
// as the gateway answers it, by decodeRange and by encoding/json.
func BenchmarkDecodeRangePage(b *testing.B) {
	page := rangeResponse{Header: responseHeader{Revision: 1234}, More: true, Count: 1000}
	for i := 0; i < visitPage; i++ {
		host := fmt.Sprintf("host%05d", i)
		v, err := json.Marshal(syntheticBeacon(host, 1, time.Now()))
		if err != nil {
			b.Fatal(err)
		}
		page.Kvs = append(page.Kvs, keyValue{Key: []byte("stado/beacons/" + host), Value: v, CreateRevision: 5, ModRevision: 77, Version: 3, Lease: 7587869382934})
	}
	data, err := json.Marshal(page)
	if err != nil {
		b.Fatal(err)
	}
	for _, dec := range []struct {
		name string
		fn   func([]byte, *rangeResponse) error
	}{
		{"decodeRange", decodeRange},
		{"encoding-json", func(d []byte, r *rangeResponse) error { return json.Unmarshal(d, r) }},
	} {
		b.Run(dec.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				var r rangeResponse
				if err := dec.fn(data, &r); err != nil || len(r.Kvs) != visitPage {
					b.Fatal(err)
				}
			}
		})
	}
}
