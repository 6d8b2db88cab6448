package registry

import (
	"bytes"
	"fmt"

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
