package registry

import (
	"bytes"
	"encoding/json"
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
