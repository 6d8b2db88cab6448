package registry

import (
	"encoding/json"
	"fmt"

	"github.com/wisent/stado/store"
)

// ServiceOutline is what planning from the beacons reads of a declared
// service: the read half's join and a cycle's plan.
type ServiceOutline struct {
	Name             string `json:"name"`
	Unit             string `json:"unit"`
	Product          string `json:"product"`
	Program          string `json:"program"`
	IncompleteReason string `json:"incomplete_reason"`
}

// Incomplete is Service.Incomplete.
func (s *ServiceOutline) Incomplete() bool { return s.Program == "" }

// OutlineOf is the outline of each of ss.
func OutlineOf(ss []Service) []ServiceOutline {
	out := make([]ServiceOutline, len(ss))
	for i := range ss {
		s := &ss[i]
		out[i] = ServiceOutline{Name: s.Name, Unit: s.Unit, Product: s.Product, Program: s.Program, IncompleteReason: s.IncompleteReason}
	}
	return out
}

// Outline is a stored registry decoded for planning from the beacons: the
// document and each target with every field of their own, and of each
// service only its outline, held apart in Services. Decoding a fleet-size
// registry's services whole is most of the cost of reading it, and a
// report cycle whose beacons stand in for its hosts never reads the rest.
// A target the caller must render or compare is decoded whole from its own
// stored bytes (Whole) before anything reads its services.
type Outline struct {
	// Doc is the document. A target's Services is nil until Whole decoded
	// it (all of them when the document was decoded whole): never read
	// Doc's services of a target Whole was not asked for.
	Doc *Document
	// Services are the outlines of each target's services, by target
	// index, whole or not.
	Services [][]ServiceOutline
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
	if err := checkStored(obj); err != nil {
		return nil, store.Meta{}, err
	}
	layout := scanEnvelope(obj.Value)
	var services [][]ServiceOutline
	if splits(layout) {
		services = make([][]ServiceOutline, layout.targets)
	}
	decode := func(i int, piece []byte, t *Target, _ bool) error {
		var o struct {
			Target
			// hides the embedded Target's services (encoding/json takes
			// the shallower field), so theirs are skipped unread
			Services []ServiceOutline `json:"services"`
		}
		if i < len(layout.services) && layout.services[i] > 0 && layout.services[i] <= MaxServicesPerTarget {
			o.Services = make([]ServiceOutline, 0, layout.services[i]) // filled, not grown
		}
		if err := json.Unmarshal(piece, &o); err != nil {
			return err
		}
		*t = o.Target
		t.Services = nil
		services[i] = o.Services
		return nil
	}
	plain := func(l envelopeLayout) []Target { return make([]Target, l.targets) }
	env, ok := decodeSplit(obj.Value, layout, false, plain, decode)
	if !ok || env.Document == nil {
		doc, meta, err := DecodeCheckedObject(obj)
		if err != nil {
			return nil, store.Meta{}, err
		}
		o := &Outline{Doc: doc, Services: make([][]ServiceOutline, len(doc.Targets))}
		for i := range doc.Targets {
			o.Services[i] = OutlineOf(doc.Targets[i].Services)
		}
		return o, meta, nil
	}
	if obj.Key == store.RegistryKey || env.Meta.Revision == 0 {
		env.Meta.Revision = obj.Revision
	}
	return &Outline{Doc: env.Document, Services: services, value: obj.Value, spans: layout.spans, whole: make([]bool, len(layout.spans))}, env.Meta, nil
}

// Whole decodes target i of Doc whole from its stored bytes, once; a
// document decoded whole has nothing left to decode.
func (o *Outline) Whole(i int) error {
	if o.spans == nil || o.whole[i] {
		return nil
	}
	var t Target
	if n := len(o.Services[i]); n > 0 {
		t.Services = make([]Service, 0, n) // as the whole decoding presizes it
	}
	if err := decodeWhole(o.value[o.spans[i][0]:o.spans[i][1]], &t, false); err != nil {
		return fmt.Errorf("read target %d of the registry: %w", i, &ParseError{Source: store.RegistryKey, Msg: err.Error()})
	}
	o.Doc.Targets[i], o.whole[i] = t, true
	return nil
}
