package registry

import (
	"encoding/json"
	"fmt"

	"github.com/wisent/stado/store"
)

// Outline is a stored registry decoded for planning from the beacons: the
// document and each target with every field, but each service with only
// its name, unit, product, program and incomplete reason (what a plan and
// the read half's join read). Decoding a fleet-size registry's services
// whole is most of the cost of reading it, and a report cycle whose
// beacons stand in for its hosts never reads the rest. A target the caller
// must render or compare is decoded whole from its own stored bytes
// (Whole) before anything reads more of it.
type Outline struct {
	// Doc is the document. Its services hold only the outline's fields,
	// except in the targets Whole decoded: never render, compare or
	// write a service of it that Whole did not decode.
	Doc *Document
	// value and spans are the stored bytes and each target's stretch of
	// them; spans is nil when Doc was decoded whole (a small document, or
	// a layout the split decoding does not take).
	value []byte
	spans [][2]int
	whole []bool
}

// DecodeOutline decodes obj, bytes that DecodeObject already read without
// error (a reader's record of them, as for DecodeCheckedObject), as an
// Outline. A document too small to split, or one whose layout the split
// decoding does not take, is decoded whole.
func DecodeOutline(obj store.Object) (*Outline, store.Meta, error) {
	if len(obj.Value) > MaxDocumentBytes+64<<10 {
		return nil, store.Meta{}, fmt.Errorf("read %s at revision %d: %w", obj.Key, obj.Revision, &ParseError{Source: obj.Key, Msg: fmt.Sprintf("stored document is %d bytes, the limit is %d (docs/limits.md)", len(obj.Value), MaxDocumentBytes)})
	}
	if err := checkJSONBudget(obj.Value, obj.Key); err != nil {
		return nil, store.Meta{}, fmt.Errorf("read %s at revision %d: %w", obj.Key, obj.Revision, err)
	}
	layout := scanEnvelope(obj.Value)
	env, ok := decodeSplit(obj.Value, layout, false, decodeOutlineTarget)
	if !ok || env.Document == nil {
		doc, meta, err := DecodeCheckedObject(obj)
		if err != nil {
			return nil, store.Meta{}, err
		}
		return &Outline{Doc: doc}, meta, nil
	}
	if obj.Key == store.RegistryKey || env.Meta.Revision == 0 {
		env.Meta.Revision = obj.Revision
	}
	return &Outline{Doc: env.Document, value: obj.Value, spans: layout.spans, whole: make([]bool, len(layout.spans))}, env.Meta, nil
}

// Whole decodes target i of Doc whole from its stored bytes, once; a
// document decoded whole has nothing left to decode.
func (o *Outline) Whole(i int) error {
	if o.spans == nil || o.whole[i] {
		return nil
	}
	var t Target
	if n := len(o.Doc.Targets[i].Services); n > 0 {
		t.Services = make([]Service, 0, n) // as the whole decoding presizes it
	}
	if err := decodeWhole(o.value[o.spans[i][0]:o.spans[i][1]], &t, false); err != nil {
		return fmt.Errorf("read target %d of the registry: %w", i, &ParseError{Source: store.RegistryKey, Msg: err.Error()})
	}
	o.Doc.Targets[i], o.whole[i] = t, true
	return nil
}

// outlineService is what an outline keeps of a declared service.
type outlineService struct {
	Name             string `json:"name"`
	Unit             string `json:"unit"`
	Product          string `json:"product"`
	Program          string `json:"program"`
	IncompleteReason string `json:"incomplete_reason"`
}

// decodeOutlineTarget decodes one target's bytes with every field of the
// target and the outline's fields of each service: the services key of
// the outer struct hides the embedded Target's (encoding/json takes the
// shallower field), so the services' other fields are skipped unread.
func decodeOutlineTarget(piece []byte, t *Target, _ bool) error {
	var o struct {
		Target
		Services []outlineService `json:"services"`
	}
	if err := json.Unmarshal(piece, &o); err != nil {
		return err
	}
	room := t.Services[:0] // presized for this target's services
	*t = o.Target
	t.Services = nil
	if o.Services != nil {
		if cap(room) < len(o.Services) {
			room = make([]Service, 0, len(o.Services))
		}
		t.Services = room[:len(o.Services)]
		for i, s := range o.Services {
			t.Services[i] = Service{Name: s.Name, Unit: s.Unit, Product: s.Product, Program: s.Program, IncompleteReason: s.IncompleteReason}
		}
	}
	return nil
}
