package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// tokenKeyViolations is the first form of jsonKeyViolations: a walk of
// encoding/json's tokens, ten times slower on a fleet-size document. It
// stays as the reference the byte scan is held to.
func tokenKeyViolations(data []byte) []Violation {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var vs []Violation
	_ = tokenWalkKeys(dec, reflect.TypeOf(Document{}), "", &vs)
	return vs
}

func tokenWalkKeys(dec *json.Decoder, t reflect.Type, path string, vs *[]Violation) error {
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
			if err := tokenWalkKeys(dec, child, p, vs); err != nil {
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
			if err := tokenWalkKeys(dec, elem, fmt.Sprintf("%s[%d]", path, i), vs); err != nil {
				return err
			}
		}
		_, err := dec.Token()
		return err
	}
	return nil
}

// The byte scan names exactly the violations the token walk names, in the
// same order, for every document encoding/json decodes.
func FuzzKeyScanAgreesWithTheTokenWalk(f *testing.F) {
	for _, seed := range []string{
		`{"version":1,"targets":[{"name":"h","os":"linux","services":[{"name":"a","unit":"a.service","program":"/bin/a","program":"/bin/evil"}]}]}`,
		`{"version":1,"targets":[{"name":"h","os":"linux","services":[{"name":"a","unit":"a.service","program":"/bin/a","PROGRAM":"/bin/evil"}]}]}`,
		`{"version":1,"TARGETS":[]}`,
		`{"version":1,"version":1,"targets":[]}`,
		`{"version":1,"targets":[{"name":"h","services":[{"env":{"FOO":"1","foo":"2","FOO":"3"}}]}]}`,
		`{"ver\u0073ion":1,"version":2, "targets" : [ {"n\u00e4me":"x","NAME":"y","name":"z"} ] }`,
		"{\"\xff\":1,\"\xfe\":2}",
		`{"a":[1,2,{"b":{"c":[true,false,null,-1.5e3,"s\"]"]}}],"A":{}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			return // the scan runs on decoded documents only
		}
		got, want := jsonKeyViolations(data), tokenKeyViolations(data)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("scan %v\nwalk %v", got, want)
		}
	})
}

// A long map's keys are checked through a map, not a scan of every key
// before them, and still each repeat is named.
func TestALongMapsRepeatsAreNamed(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"version":1,"targets":[{"name":"h","services":[{"env":{`)
	for i := range 100 {
		fmt.Fprintf(&b, `"K%d":"v",`, i)
	}
	b.WriteString(`"K7":"again","k7":"other"}}]}]}`)
	got := jsonKeyViolations([]byte(b.String()))
	if len(got) != 1 || got[0].Path != "targets[0].services[0].env.K7" {
		t.Fatalf("violations %v, want one naming targets[0].services[0].env.K7", got)
	}
	if fmt.Sprint(got) != fmt.Sprint(tokenKeyViolations([]byte(b.String()))) {
		t.Fatal("the scan and the walk disagree")
	}
}
