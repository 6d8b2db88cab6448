package registry

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/wisent/stado/store"
)

// A fleet-size registry read as an outline is the whole document with each
// service's outline (what a plan reads) held apart; each target decoded
// whole afterwards is that target as the whole decoding reads it, and only
// that one.
func TestAnOutlineIsTheDocumentWithItsServicesCutToWhatAPlanReads(t *testing.T) {
	no := false
	d := &Document{Version: 1, Releases: map[string]ReleaseDecl{"p": {Version: "1.0"}}}
	for i := range 3 * splitAbove {
		tg := Target{Name: fmt.Sprintf("h%03d", i), OS: "linux", SSH: SSH{Address: "127.0.0.1", Port: 2200 + i, User: "root"},
			Alerts: []AlertChannel{{Name: "ops", Command: &CommandAlert{Argv: []string{"/bin/true"}}}}}
		for j := range 4 {
			s := Service{Name: fmt.Sprintf("s%d", j), Unit: fmt.Sprintf("s%d.service", j), Program: "/usr/bin/s",
				Args: []string{"--port", fmt.Sprint(9000 + j)}, Env: map[string]string{"A": "b"}, Product: "p", KeepAlive: &no}
			if j == 3 {
				s.Program, s.Args, s.IncompleteReason = "", nil, "adopted without a program"
			}
			tg.Services = append(tg.Services, s)
		}
		d.Targets = append(d.Targets, tg)
	}
	value, err := json.Marshal(envelope{Meta: store.Meta{Writer: "w", Revision: 7}, Document: d})
	if err != nil {
		t.Fatal(err)
	}
	assertOutlineIsTheCutDocument(t, value)
	o, _, err := DecodeOutline(store.Object{Key: store.RegistryKey, Value: value, Revision: 7})
	if err != nil {
		t.Fatal(err)
	}
	if o.spans == nil {
		t.Fatal("a fleet-size registry was decoded whole, not as an outline")
	}
	if err := o.Whole(5); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(o.Doc.Targets[5], d.Targets[5]) {
		t.Fatalf("target 5 decoded whole:\n%+v\nwant\n%+v", o.Doc.Targets[5], d.Targets[5])
	}
	if o.Doc.Targets[6].Services != nil {
		t.Fatal("target 6 is whole though only target 5 was asked for")
	}
	if got := o.Services[6][3]; got != (ServiceOutline{Name: "s3", Unit: "s3.service", Product: "p", IncompleteReason: "adopted without a program"}) || !got.Incomplete() {
		t.Fatalf("target 6's fourth service outline: %+v", got)
	}
}

// assertOutlineIsTheCutDocument: bytes the non-strict decoding reads (the
// only bytes an outline is asked of) read as an outline, split however few
// targets there are, into the same document with each service's outline
// apart; every target decoded whole then gives the document itself.
func assertOutlineIsTheCutDocument(t *testing.T, value []byte) {
	t.Helper()
	obj := store.Object{Key: store.RegistryKey, Value: value, Revision: 1}
	whole, _, err := decodeEnvelopeAs(obj, false)
	if err != nil {
		return
	}
	defer func(n int) { splitAbove = n }(splitAbove)
	splitAbove = 1
	o, _, err := DecodeOutline(obj)
	if err != nil {
		t.Fatalf("%q: decodes whole but not as an outline: %v", value, err)
	}
	want := *whole
	if o.spans != nil { // split: the targets' own fields, their services apart
		want.Targets = make([]Target, len(whole.Targets))
		for i, tg := range whole.Targets {
			want.Targets[i] = tg
			want.Targets[i].Services = nil
		}
	}
	if !reflect.DeepEqual(o.Doc, &want) {
		t.Fatalf("%q: outline\n%+v\nwant\n%+v", value, o.Doc, &want)
	}
	if len(o.Services) != len(whole.Targets) {
		t.Fatalf("%q: %d targets' service outlines, want %d", value, len(o.Services), len(whole.Targets))
	}
	for i, tg := range whole.Targets {
		if got, want := o.Services[i], OutlineOf(tg.Services); len(got)+len(want) > 0 && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: target %d's service outlines\n%+v\nwant\n%+v", value, i, got, want)
		}
	}
	for i := range o.Doc.Targets {
		if err := o.Whole(i); err != nil {
			t.Fatalf("%q: target %d: %v", value, i, err)
		}
	}
	if !reflect.DeepEqual(o.Doc, whole) {
		t.Fatalf("%q: every target decoded whole\n%+v\nwant\n%+v", value, o.Doc, whole)
	}
}
