package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/wisent/stado/store"
)

// Decoding into the presized document gives exactly what decoding into a
// fresh one gives, whatever the envelope holds.
func TestPresizedDecodingEqualsPlainDecoding(t *testing.T) {
	many := &Document{Version: 1}
	for i := 0; i < 150; i++ {
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
		// shapes a split decoding must not read otherwise than a whole one
		{"missing comma", envelopeOf(`{"name":"a"} {"name":"b"}`)},
		{"trailing comma", envelopeOf(`{"name":"a"},`)},
		{"double comma", envelopeOf(`{"name":"a"},,{"name":"b"}`)},
		{"value after a target", envelopeOf(`{"name":"a"} 7`)},
		{"null target", envelopeOf(`null`)},
		{"number target", envelopeOf(`7`)},
		{"unknown field in a target", envelopeOf(`{"name":"a","bogus":1}`)},
		{"case variant field in a target", envelopeOf(`{"NAME":"a","Os":"linux"}`)},
		{"two targets keys", `{"meta":{},"document":{"version":1,"targets":[` + targetList(70) + `],"targets":[{"name":"late"}]}}`},
		{"case variant targets key", `{"meta":{},"document":{"version":1,"targets":[` + targetList(70) + `],"Targets":[{"name":"late"}]}}`},
		{"escaped targets key", `{"meta":{},"document":{"version":1,"targets":[` + targetList(70) + `],"t\u0061rgets":[{"name":"late"}]}}`},
		{"case variant document key", `{"meta":{},"document":{"version":1,"targets":[` + targetList(70) + `]},"DOCUMENT":{"version":1}}`},
		{"targets not a list", `{"meta":{},"document":{"version":1,"targets":{"name":"a"}}}`},
		{"targets in meta", `{"meta":{"targets":[1]},"document":{"version":1,"targets":[` + targetList(70) + `]}}`},
		{"trailing bytes", `{"meta":{},"document":{"version":1,"targets":[` + targetList(70) + `]}} ]]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var plain envelope
			dec := json.NewDecoder(bytes.NewReader([]byte(tc.envelope)))
			dec.DisallowUnknownFields()
			perr := dec.Decode(&plain)
			got, _, gerr := decodeEnvelope(store.Object{Key: store.RegistryKey, Value: []byte(tc.envelope), Revision: 1})
			if (perr != nil || plain.Document == nil) != (gerr != nil) {
				t.Fatalf("plain error %v (document %v), presized error %v", perr, plain.Document != nil, gerr)
			}
			if gerr == nil && !reflect.DeepEqual(got, plain.Document) {
				t.Fatalf("presized decoding differs:\n%+v\nwant\n%+v", got, plain.Document)
			}
		})
	}
}

// targetList is n small targets, comma-separated.
func targetList(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"name":"h%d","os":"linux","services":[{"name":"s","unit":"s.service","program":"/bin/s"}]}`, i)
	}
	return b.String()
}

// envelopeOf is an envelope of 70 targets with odd in the middle.
func envelopeOf(odd string) string {
	return `{"meta":{"writer":"w"},"document":{"version":1,"targets":[` + targetList(35) + `,` + odd + `,` + targetList(35) + `]}}`
}
