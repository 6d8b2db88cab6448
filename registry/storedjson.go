package registry

import (
	"bytes"
	"encoding/json"
)

// DecodeStored decodes a stored JSON object (a registry envelope, a
// beacon) into v with encoding/json: unknown fields are refused when
// strict. What is stored can be written by anyone who can write the store;
// the standard decoder returns an error for any input, never a panic.
func DecodeStored(value []byte, v any, strict bool) error {
	if !strict {
		return json.Unmarshal(value, v)
	}
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
