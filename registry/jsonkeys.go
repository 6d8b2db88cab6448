package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// jsonKeyViolations reads a JSON document token by token, the way no
// decoder of the standard library does, and names every key that YAML
// would refuse and encoding/json would quietly resolve: a key repeated in
// one object (the last would win), a key repeated in another case
// ("program" then "PROGRAM"), and a field name written in another case
// than the document's own (encoding/json matches names without regard to
// case). Keys of maps (env) are compared exactly: FOO and foo are two
// variables. A syntax error ends the walk; the decoder reports it.
func jsonKeyViolations(data []byte) []Violation {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var vs []Violation
	_ = walkJSONKeys(dec, reflect.TypeOf(Document{}), "", &vs)
	return vs
}

func walkJSONKeys(dec *json.Decoder, t reflect.Type, path string, vs *[]Violation) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch d {
	case '{':
		var fields map[string]reflect.StructField
		isStruct := t != nil && t.Kind() == reflect.Struct
		if isStruct {
			fields = fieldsOf(t, "json")
		}
		seen := map[string]string{} // folded key -> first spelling
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := kt.(string)
			p := joinPath(path, key)
			if t != nil && t.Kind() == reflect.Map {
				p = path + "." + key
			}
			fold := key
			if isStruct {
				fold = strings.ToLower(key)
			}
			if first, dup := seen[fold]; dup {
				if first == key {
					*vs = append(*vs, Violation{Path: p, Message: "duplicate key: the object names it twice"})
				} else {
					*vs = append(*vs, Violation{Path: p, Message: fmt.Sprintf("key %q repeats %q in another case", key, first)})
				}
			} else {
				seen[fold] = key
			}
			var child reflect.Type
			switch {
			case isStruct:
				if f, ok := fields[key]; ok {
					child = f.Type
				} else {
					for name, f := range fields {
						if strings.EqualFold(name, key) {
							*vs = append(*vs, Violation{Path: p, Message: fmt.Sprintf("unknown field (the field is %q; names are case-sensitive)", name)})
							child = f.Type
							break
						}
					}
				}
			case t != nil && t.Kind() == reflect.Map:
				child = t.Elem()
			}
			if err := walkJSONKeys(dec, child, p, vs); err != nil {
				return err
			}
		}
		_, err := dec.Token()
		return err
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; dec.More(); i++ {
			if err := walkJSONKeys(dec, elem, fmt.Sprintf("%s[%d]", path, i), vs); err != nil {
				return err
			}
		}
		_, err := dec.Token()
		return err
	}
	return nil
}
