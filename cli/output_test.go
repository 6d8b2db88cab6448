package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// decodeDoc checks that out is exactly one JSON document of kind and
// decodes it into v.
func decodeDoc(t *testing.T, out, kind string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	var head struct {
		Kind string `json:"kind"`
	}
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		t.Fatalf("output is not a JSON document: %v\n%s", err, out)
	}
	if dec.More() {
		t.Fatalf("output holds more than one JSON document:\n%s", out)
	}
	if err := json.Unmarshal(raw, &head); err != nil || head.Kind != kind {
		t.Fatalf("kind %q (%v), want %q", head.Kind, err, kind)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("decode %s: %v", kind, err)
	}
}

func TestEmitPrintsOneDocumentWithItsKindFirstOrText(t *testing.T) {
	cases := []struct {
		name string
		doc  any
		want string
	}{
		// a struct's fields follow the kind
		{"struct", struct {
			A int `json:"a"`
		}{1}, `{"kind":"k","a":1}`},
		// an empty object and nil are the kind alone
		{"empty", struct{}{}, `{"kind":"k"}`},
		{"nil", nil, `{"kind":"k"}`},
		// a map keeps its (sorted) keys after the kind
		{"map", map[string]int{"b": 2, "a": 1}, `{"kind":"k","a":1,"b":2}`},
	}
	for _, c := range cases {
		var out bytes.Buffer
		env := NewEnv(strings.NewReader(""), &out, &bytes.Buffer{})
		env.JSON = true
		if err := emit(env, "k", c.doc, func(t *text) { t.f("text") }); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, out.Bytes()); err != nil || compact.String() != c.want {
			t.Errorf("%s: %s (%v), want %s", c.name, out.String(), err, c.want)
		}
	}
	// a document that is not an object cannot carry a kind
	env := NewEnv(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	env.JSON = true
	if err := emit(env, "k", []int{1}, nil); err == nil {
		t.Error("a list was printed as a document")
	}
}

type failingWriter struct{ n int }

func (w *failingWriter) Write(p []byte) (int, error) {
	w.n++
	return 0, errors.New("stdout closed")
}

func TestEmitTextReturnsTheFirstWriteErrorAndStopsWriting(t *testing.T) {
	w := &failingWriter{}
	env := NewEnv(strings.NewReader(""), w, &bytes.Buffer{})
	err := emit(env, "k", nil, func(t *text) {
		t.f("one\n")
		t.f("two\n")
		t.table([]string{"A"}, [][]string{{"x"}})
	})
	if err == nil || w.n != 1 {
		t.Fatalf("err %v after %d writes, want the first error and one write", err, w.n)
	}
}

// A final error carries words from hosts and services: it reaches the
// terminal escaped, whatever it holds.
func TestAFinalErrorIsEscaped(t *testing.T) {
	var stderr bytes.Buffer
	printError(&Env{Stderr: &stderr}, errors.New("ok\x1b[2J\nforged\u202eline"), 1, "x")
	if strings.ContainsAny(stderr.String(), "\x1b\u202e") {
		t.Errorf("error message let control characters through: %q", stderr.String())
	}
}
