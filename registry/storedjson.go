package registry

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"

	gojson "github.com/goccy/go-json"
)

// DecodeStored decodes a stored JSON object (a registry envelope, a
// beacon) into v, with encoding/json's meaning: the same field matching,
// the same types, unknown fields refused when strict. The read half decodes
// every beacon and the whole registry on each call, megabytes at fleet size,
// so it uses a decoder several times faster than encoding/json's. What is
// stored can be written by anyone who can write the store, so a panic inside
// the decoder on hostile input is an error, never a crash of the reader.
func DecodeStored(value []byte, v any, strict bool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("undecodable JSON: %v", r)
		}
	}()
	if !strict {
		return gojson.Unmarshal(value, v)
	}
	dec := gojson.NewDecoder(bytes.NewReader(value))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// decodeSplit decodes a fleet-size envelope with its targets apart: the
// envelope with the targets array emptied, then each target from its own
// bytes, on every processor the process may use. ok is false, and nothing
// is decoded, unless the layout allows it and every piece decodes whole
// (one value, nothing after it); the caller then decodes the envelope in
// one piece, which also gives the error worth reporting. Either way the
// document is the one decoding the envelope whole gives.
func decodeSplit(value []byte, l envelopeLayout) (envelope, bool) {
	if !l.split || l.targets < splitAbove || l.targets > MaxTargets {
		return envelope{}, false
	}
	rest := make([]byte, 0, l.open+1+len(value)-l.close)
	rest = append(append(rest, value[:l.open+1]...), value[l.close:]...)
	var env envelope
	if err := DecodeStored(rest, &env, true); err != nil || env.Document == nil {
		return envelope{}, false
	}
	targets := l.presized().Targets
	err := parallel(len(targets), runtime.GOMAXPROCS(0), func(i int, _ *[]byte) error {
		return decodeWhole(value[l.spans[i][0]:l.spans[i][1]], &targets[i])
	})
	if err != nil {
		return envelope{}, false
	}
	env.Document.Targets = targets
	return env, true
}

// splitAbove is the fewest targets decoded apart (a variable for tests).
var splitAbove = 64

// decodeWhole decodes piece into v strictly (unknown fields refused) and
// refuses anything but white space after the value.
func decodeWhole(piece []byte, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("undecodable JSON: %v", r)
		}
	}()
	dec := gojson.NewDecoder(bytes.NewReader(piece))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if off := dec.InputOffset(); off < 0 || off > int64(len(piece)) || len(bytes.TrimLeft(piece[off:], " \t\r\n")) > 0 {
		return errors.New("more than one value")
	}
	return nil
}
