package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/wisent/stado/store"
)

// stdDecode is encoding/json's reading of value, the meaning DecodeStored
// must keep.
func stdDecode(value []byte, v any, strict bool) error {
	dec := json.NewDecoder(bytes.NewReader(value))
	if strict {
		dec.DisallowUnknownFields()
	}
	return dec.Decode(v)
}

// storedEnvelopes are envelopes as a push stores them (every good test
// document) and as someone writing the store by hand might leave them.
func storedEnvelopes(t testing.TB) [][]byte {
	var out [][]byte
	files, _ := filepath.Glob("testdata/good/*")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d, err := Parse(data, f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		b, err := json.Marshal(envelope{Meta: store.Meta{Writer: "w", Reason: "r", Revision: 3}, Document: d})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return append(out,
		[]byte(`{"meta":{},"document":{"version":1,"TARGETS":[{"Name":"h","os":"linux","Services":[{"name":"a","unit":"a.service","program":"/bin/a","args":["x"]}]}]}}`),
		[]byte(`{"meta":{},"document":{"version":1,"targets":[{"name":"h","name":"i"}]}}`),
		[]byte(`{"meta":{},"document":{"version":1,"bogus":true}}`),
		[]byte(`{"meta":{},"document":{"version":"1"}}`),
		[]byte(`{"meta":{},"document":{"version":1e400}}`),
		[]byte(`{"meta":{},"document":{"version":1,"targets":[{"name":"a\ud800\xff\u00e9"}]}}`),
		[]byte(`{"meta":{},"document":null}`),
		[]byte(`{"meta":{},"document":{"version":1}} trailing`),
		[]byte(`{"meta":{},"document":{"version":1,"targets":[{"services":[{"args":[1]}]}]}}`),
		[]byte(`{"meta":`),
		[]byte(``),
		[]byte(`[]`),
		[]byte(envelopeOf(`{"name":"a"} {"name":"b"}`)),
		[]byte(`{"meta":{},"document":{"version":1,"targets":[`+targetList(3)+`],"Targets":[]}}`),
		[]byte(`{"meta":{},"document":{"targets":[{"name":"a"},null,7,{"services":[{"name":"s"}]}],"version":1}}`),
	)
}

// A stored envelope, read into its presized document, holds what
// encoding/json reads from it into a zero envelope, and fails exactly
// where encoding/json fails.
func TestStoredEnvelopesDecodeAsEncodingJSONDecodesThem(t *testing.T) {
	for _, value := range storedEnvelopes(t) {
		assertDecodesAsStd(t, value)
	}
}

func assertDecodesAsStd(t *testing.T, value []byte) {
	t.Helper()
	assertEnvelopeDecodesAsStd(t, value)
	assertOutlineIsTheCutDocument(t, value)
	var got, want envelope
	gotErr := DecodeStored(value, &got, true)
	wantErr := stdDecode(value, &want, true)
	if (gotErr == nil) != (wantErr == nil) {
		t.Fatalf("%q: error %v, encoding/json's %v", value, gotErr, wantErr)
	}
	if wantErr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: decoded\n%+v\nencoding/json decoded\n%+v", value, got.Document, want.Document)
	}
}

// Hostile stored bytes never crash the reader: they decode as
// encoding/json decodes them, or are an error.
func FuzzStoredEnvelopeDecodesAsEncodingJSON(f *testing.F) {
	for _, value := range storedEnvelopes(f) {
		f.Add(value)
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		assertDecodesAsStd(t, value)
	})
}

// assertEnvelopeDecodesAsStd: the envelope decoder, strict and not
// (DecodeCheckedObject), split into targets whenever the layout allows
// however few there are, reads the document encoding/json reads, and fails
// exactly where it fails or finds no document.
func assertEnvelopeDecodesAsStd(t *testing.T, value []byte) {
	t.Helper()
	defer func(n int) { splitAbove = n }(splitAbove)
	splitAbove = 1
	for _, strict := range []bool{true, false} {
		got, _, gotErr := decodeEnvelopeAs(store.Object{Key: store.RegistryKey, Value: value, Revision: 1}, strict)
		var want envelope
		var wantErr error
		if strict {
			wantErr = stdDecode(value, &want, true)
		} else {
			wantErr = json.Unmarshal(value, &want)
		}
		if wantErr == nil && want.Document == nil {
			wantErr = errors.New("no document")
		}
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("%q (strict %v): decodeEnvelope error %v, encoding/json's %v", value, strict, gotErr, wantErr)
		}
		if wantErr == nil && !reflect.DeepEqual(got, want.Document) {
			t.Fatalf("%q (strict %v): decodeEnvelope read\n%+v\nencoding/json read\n%+v", value, strict, got, want.Document)
		}
	}
}
