package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"sync/atomic"

	"github.com/wisent/stado/spread"
)

// DecodeStored decodes a stored JSON object (a registry envelope, a
// beacon) into v with encoding/json, refusing unknown fields when strict.
// What is stored can be written by anyone who can write the store, so the
// standard decoder is the one used: it returns an error on hostile input
// and never panics. Strict decoding reads the first JSON value only.
func DecodeStored(value []byte, v any, strict bool) error {
	if !strict {
		return json.Unmarshal(value, v)
	}
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// decodeSplit decodes a fleet-size envelope with its targets apart: the
// envelope with the targets array emptied, then the targets from their own
// bytes, in runs spread over every processor the process may use. ok is
// false, and nothing is decoded, unless the layout allows it and every
// piece decodes whole (one value, nothing after it); the caller then
// decodes the envelope in one piece, which also gives the error worth
// reporting. Either way the document is the one decoding the envelope
// whole gives: the layout refuses every spelling of the keys that
// encoding/json would match besides the one it found. Target i's bytes go
// to decodeTarget (decodeTarget below, or an outline's lighter decoding)
// with &targets(l)[i].
func decodeSplit(value []byte, l envelopeLayout, strict bool, targets func(envelopeLayout) []Target, decodeTarget func(i int, piece []byte, t *Target, strict bool) error) (envelope, bool) {
	if !splits(l) {
		return envelope{}, false
	}
	rest := make([]byte, 0, l.open+1+len(value)-l.close)
	rest = append(append(rest, value[:l.open+1]...), value[l.close:]...)
	var env envelope
	if err := DecodeStored(rest, &env, strict); err != nil || env.Document == nil {
		return envelope{}, false
	}
	list := targets(l)
	// a processor busy with something else (the beacons, read beside the
	// registry) leaves its share of the runs to the others
	var failed atomic.Bool
	spread.Runs(len(list), 32, func(lo, hi int) {
		for i := lo; i < hi && !failed.Load(); i++ {
			if decodeTarget(i, value[l.spans[i][0]:l.spans[i][1]], &list[i], strict) != nil {
				failed.Store(true)
			}
		}
	})
	if failed.Load() {
		return envelope{}, false
	}
	env.Document.Targets = list
	return env, true
}

// splits reports whether decodeSplit takes a document of layout l.
func splits(l envelopeLayout) bool {
	return l.split && l.targets >= splitAbove && l.targets <= MaxTargets
}

// presizedTargets are the targets of the document l presizes.
func presizedTargets(l envelopeLayout) []Target { return l.presized().Targets }

// splitAbove is the fewest targets decoded apart (a variable for tests).
var splitAbove = 64

// decodeTarget decodes one target's bytes whole (decodeWhole).
func decodeTarget(_ int, piece []byte, t *Target, strict bool) error {
	return decodeWhole(piece, t, strict)
}

// decodeWhole decodes piece into v as DecodeStored does, and refuses
// anything but white space after the value.
func decodeWhole(piece []byte, v any, strict bool) error {
	if !strict {
		return json.Unmarshal(piece, v) // refuses a second value itself
	}
	dec := json.NewDecoder(bytes.NewReader(piece))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if off := dec.InputOffset(); off < 0 || off > int64(len(piece)) || len(bytes.TrimLeft(piece[off:], " \t\r\n")) > 0 {
		return errors.New("more than one value")
	}
	return nil
}
