package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
)

// Decoding into the presized document gives exactly what decoding into a
// fresh one gives, whatever the envelope holds.
func TestPresizedDecodingEqualsPlainDecoding(t *testing.T) {
	many := &Document{Version: 1}
	for i := 0; i < 50; i++ {
		tg := Target{Name: fmt.Sprintf("h%d", i), OS: OSLinux}
		for j := 0; j < i%7; j++ {
			tg.Services = append(tg.Services, Service{Name: fmt.Sprintf("s%d", j), Unit: fmt.Sprintf("s%d.service", j), Program: "/bin/s", Args: []string{"[", "]", `"{,}"`, `\`}})
		}
		many.Targets = append(many.Targets, tg)
	}
	docJSON, _ := json.Marshal(many)
	for _, tc := range []struct{ name, envelope string }{
		// a fleet with varying service counts, strings full of brackets
		{"fleet", `{"meta":{"writer":"w","time":"2026-01-01T00:00:00Z"},"document":` + string(docJSON) + `}`},
		// no targets
		{"no targets", `{"meta":{"writer":"w","time":"2026-01-01T00:00:00Z"},"document":{"version":1,"targets":[]}}`},
		// targets null
		{"null targets", `{"meta":{"writer":"w","time":"2026-01-01T00:00:00Z"},"document":{"version":1,"targets":null}}`},
		// a target with services null and one with an empty list
		{"null services", `{"meta":{"writer":"w","time":"2026-01-01T00:00:00Z"},"document":{"version":1,"targets":[{"name":"a","os":"linux","services":null},{"name":"b","os":"linux","services":[]}]}}`},
		// document before meta, whitespace, a key named targets elsewhere
		{"order", "{ \"document\" : {\"version\":1,\"targets\":[ {\"name\":\"a\",\"os\":\"linux\",\"services\":[{\"name\":\"s\",\"unit\":\"s.service\",\"env\":{\"targets\":\"[1,2]\"}}]} ]} , \"meta\":{\"writer\":\"w\",\"time\":\"2026-01-01T00:00:00Z\"}}"},
		// no document at all
		{"no document", `{"meta":{"writer":"w","time":"2026-01-01T00:00:00Z"}}`},
		// document null
		{"null document", `{"meta":{"writer":"w","time":"2026-01-01T00:00:00Z"},"document":null}`},
		// truncated bytes
		{"truncated", `{"meta":{"writer":"w"},"document":{"version":1,"targets":[{"name":"a`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var plain envelope
			dec := json.NewDecoder(bytes.NewReader([]byte(tc.envelope)))
			dec.DisallowUnknownFields()
			perr := dec.Decode(&plain)
			got, _, gerr := decodeEnvelope(Object{Key: RegistryKey, Value: []byte(tc.envelope), Revision: 1})
			if (perr != nil || plain.Document == nil) != (gerr != nil) {
				t.Fatalf("plain error %v (document %v), presized error %v", perr, plain.Document != nil, gerr)
			}
			if gerr == nil && !reflect.DeepEqual(got, plain.Document) {
				t.Fatalf("presized decoding differs:\n%+v\nwant\n%+v", got, plain.Document)
			}
		})
	}
}
