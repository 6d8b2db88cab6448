package registry

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// jsonKeyViolations reads the keys of a JSON document, the way no decoder
// of the standard library does, and names every key that YAML would
// refuse and encoding/json would quietly resolve: a key repeated in one
// object (the last would win), a key repeated in another case ("program"
// then "PROGRAM"), and a field name written in another case than the
// document's own (encoding/json matches names without regard to case).
// Keys of maps (env) are compared exactly: FOO and foo are two variables.
//
// data has been decoded by encoding/json already, so it is one valid JSON
// value: the scan walks its bytes once, skipping values, and builds a
// field path only for a key it names. A key with an escape or a byte past
// ASCII is read by encoding/json, so it compares as the decoder saw it.
func jsonKeyViolations(data []byte) []Violation {
	s := keyScan{data: data}
	s.value(reflect.TypeOf(Document{}))
	return s.vs
}

// keyScan walks one valid JSON value.
type keyScan struct {
	data []byte
	i    int
	vs   []Violation
	path []pathStep
}

// pathStep is one step of a field path: a key, or an index when key is
// empty and index is not negative.
type pathStep struct {
	key   string
	index int
}

func (s *keyScan) at(key string) string {
	var b strings.Builder
	for _, p := range s.path {
		if p.index >= 0 {
			b.WriteString("[" + strconv.Itoa(p.index) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p.key)
	}
	if b.Len() > 0 {
		b.WriteByte('.')
	}
	b.WriteString(key)
	return b.String()
}

func (s *keyScan) space() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

// str reads the string at s.i (its opening quote) and returns it as the
// decoder would.
func (s *keyScan) str() string {
	start := s.i
	plain := true
	s.i++
	for s.i < len(s.data) {
		c := s.data[s.i]
		switch {
		case c == '\\':
			plain = false
			s.i += 2
			continue
		case c == '"':
			s.i++
			raw := s.data[start+1 : s.i-1]
			if plain {
				return string(raw)
			}
			var out string
			_ = json.Unmarshal(s.data[start:s.i], &out)
			return out
		case c >= utf8.RuneSelf:
			plain = false
		}
		s.i++
	}
	return ""
}

// value walks the value at s.i, read into a t (nil: not a field of the
// document's own types).
func (s *keyScan) value(t reflect.Type) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	s.space()
	if s.i >= len(s.data) {
		return
	}
	switch s.data[s.i] {
	case '{':
		s.object(t)
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		s.i++
		s.path = append(s.path, pathStep{index: 0})
		for n := 0; ; n++ {
			s.space()
			if s.i >= len(s.data) || s.data[s.i] == ']' {
				break
			}
			s.path[len(s.path)-1].index = n
			s.value(elem)
			s.space()
			if s.i < len(s.data) && s.data[s.i] == ',' {
				s.i++
			}
		}
		s.path = s.path[:len(s.path)-1]
		s.i++
	case '"':
		s.str()
	default: // a number, true, false or null: up to the next delimiter
		for s.i < len(s.data) {
			switch s.data[s.i] {
			case ',', ']', '}', ' ', '\t', '\r', '\n':
				return
			}
			s.i++
		}
	}
}

// seenKey is a key already read in one object, under its folded form.
type seenKey struct{ fold, key string }

func (s *keyScan) object(t reflect.Type) {
	var fields map[string]reflect.StructField
	isStruct := t != nil && t.Kind() == reflect.Struct
	if isStruct {
		fields = cachedFields(t)
	}
	var seen []seenKey
	var many map[string]string // fold -> first spelling, past 32 keys
	s.i++
	for {
		s.space()
		if s.i >= len(s.data) || s.data[s.i] == '}' {
			break
		}
		key := s.str()
		s.space()
		s.i++ // the colon
		fold := key
		if isStruct {
			fold = strings.ToLower(key)
		}
		first, dup := "", false
		if many != nil {
			first, dup = many[fold]
		} else {
			for _, k := range seen {
				if k.fold == fold {
					first, dup = k.key, true
					break
				}
			}
		}
		switch {
		case dup && first == key:
			s.vs = append(s.vs, Violation{Path: s.at(key), Message: "duplicate key: the object names it twice"})
		case dup:
			s.vs = append(s.vs, Violation{Path: s.at(key), Message: fmt.Sprintf("key %q repeats %q in another case", key, first)})
		case many != nil:
			many[fold] = key
		default:
			seen = append(seen, seenKey{fold, key})
			if len(seen) > 32 { // a long map (env): no quadratic scan
				many = make(map[string]string, 2*len(seen))
				for _, k := range seen {
					many[k.fold] = k.key
				}
			}
		}
		var child reflect.Type
		switch {
		case isStruct:
			if f, ok := fields[key]; ok {
				child = f.Type
			} else {
				for name, f := range fields {
					if strings.EqualFold(name, key) {
						s.vs = append(s.vs, Violation{Path: s.at(key), Message: fmt.Sprintf("unknown field (the field is %q; names are case-sensitive)", name)})
						child = f.Type
						break
					}
				}
			}
		case t != nil && t.Kind() == reflect.Map:
			child = t.Elem()
		}
		s.path = append(s.path, pathStep{key: key, index: -1})
		s.value(child)
		s.path = s.path[:len(s.path)-1]
		s.space()
		if s.i < len(s.data) && s.data[s.i] == ',' {
			s.i++
		}
	}
	s.i++
}

// fieldCache holds fieldsOf(t, "json") per type: the scan asks it for
// every object of the document.
var fieldCache sync.Map // reflect.Type -> map[string]reflect.StructField

func cachedFields(t reflect.Type) map[string]reflect.StructField {
	if f, ok := fieldCache.Load(t); ok {
		return f.(map[string]reflect.StructField)
	}
	f := fieldsOf(t, "json")
	fieldCache.Store(t, f)
	return f
}
