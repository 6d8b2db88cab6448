package etcdstore

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
)

// A page of beacons is megabytes of base64 in JSON; encoding/json reads it
// at about 100 MB/s, most of it scanning the base64 strings byte by byte.
// decodeRange reads the gateway's range answer (an object of header, kvs,
// more and count, whose strings carry no escapes) by finding each string's
// end with one search, and hands anything else to encoding/json, so the
// result is always the one encoding/json gives.

// decodeRange decodes a range answer into resp.
func decodeRange(data []byte, resp *rangeResponse) error {
	s := scanner{b: data}
	if s.rangeResponse(resp) && s.end() {
		return nil
	}
	*resp = rangeResponse{}
	return json.Unmarshal(data, resp)
}

// scanner reads the subset of JSON the gateway writes; each method
// reports false on anything else.
type scanner struct {
	b     []byte
	i     int
	depth int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) end() bool {
	s.ws()
	return s.i == len(s.b)
}

// next consumes c if it comes next.
func (s *scanner) next(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str reads a string without escapes or control characters and returns
// its bytes (a slice of the input).
func (s *scanner) str() ([]byte, bool) {
	if !s.next('"') {
		return nil, false
	}
	j := bytes.IndexByte(s.b[s.i:], '"')
	if j < 0 {
		return nil, false
	}
	raw := s.b[s.i : s.i+j]
	for _, c := range raw {
		if c == '\\' || c < 0x20 {
			return nil, false
		}
	}
	s.i += j + 1
	return raw, true
}

// bytesField reads a base64 string as encoding/json reads it into []byte.
func (s *scanner) bytesField(dst *[]byte) bool {
	raw, ok := s.str()
	if !ok {
		return false
	}
	out := make([]byte, base64.StdEncoding.DecodedLen(len(raw)))
	n, err := base64.StdEncoding.Decode(out, raw)
	if err != nil {
		return false
	}
	*dst = out[:n]
	return true
}

// int64Field reads an integer in a string (encoding/json's ",string").
func (s *scanner) int64Field(dst *int64) bool {
	raw, ok := s.str()
	if !ok {
		return false
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return false
	}
	*dst = n
	return true
}

func (s *scanner) boolField(dst *bool) bool {
	s.ws()
	switch {
	case bytes.HasPrefix(s.b[s.i:], []byte("true")):
		s.i += 4
		*dst = true
	case bytes.HasPrefix(s.b[s.i:], []byte("false")):
		s.i += 5
		*dst = false
	default:
		return false
	}
	return true
}

// object reads an object, handing each member's name to field, which
// reads the value.
func (s *scanner) object(field func(name string) bool) bool {
	if s.depth++; s.depth > 32 || !s.next('{') {
		return false
	}
	defer func() { s.depth-- }()
	if s.next('}') {
		return true
	}
	for {
		name, ok := s.str()
		if !ok || !s.next(':') || !field(string(name)) {
			return false
		}
		if s.next(',') {
			continue
		}
		return s.next('}')
	}
}

// array reads an array, reading each element with elem.
func (s *scanner) array(elem func() bool) bool {
	if s.depth++; s.depth > 32 || !s.next('[') {
		return false
	}
	defer func() { s.depth-- }()
	if s.next(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if s.next(',') {
			continue
		}
		return s.next(']')
	}
}

// other reads the value of a member none of known names; a name that
// differs from one of them only in case is encoding/json's to read.
func (s *scanner) other(name string, known ...string) bool {
	for _, k := range known {
		if strings.EqualFold(name, k) {
			return false
		}
	}
	return s.skip()
}

// skip reads a value of a member nobody asked for.
func (s *scanner) skip() bool {
	s.ws()
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		_, ok := s.str()
		return ok
	case c == '{':
		return s.object(func(string) bool { return s.skip() })
	case c == '[':
		return s.array(s.skip)
	default: // a number or a literal
		j := s.i
		for j < len(s.b) && bytes.IndexByte([]byte("+-.0123456789eEtrufalsn"), s.b[j]) >= 0 {
			j++
		}
		if j == s.i || !json.Valid(s.b[s.i:j]) {
			return false
		}
		s.i = j
		return true
	}
}

func (s *scanner) rangeResponse(r *rangeResponse) bool {
	return s.object(func(name string) bool {
		switch name {
		case "header":
			return s.object(func(name string) bool {
				switch name {
				case "revision":
					return s.int64Field(&r.Header.Revision)
				case "member_id":
					raw, ok := s.str()
					if !ok {
						return false
					}
					n, err := strconv.ParseUint(string(raw), 10, 64)
					r.Header.MemberID = n
					return err == nil
				}
				return s.other(name, "revision", "member_id")
			})
		case "kvs":
			r.Kvs = []keyValue{}
			return s.array(func() bool {
				var kv keyValue
				ok := s.object(func(name string) bool {
					switch name {
					case "key":
						return s.bytesField(&kv.Key)
					case "value":
						return s.bytesField(&kv.Value)
					case "create_revision":
						return s.int64Field(&kv.CreateRevision)
					case "mod_revision":
						return s.int64Field(&kv.ModRevision)
					case "version":
						return s.int64Field(&kv.Version)
					case "lease":
						return s.int64Field(&kv.Lease)
					}
					return s.other(name, "key", "value", "create_revision", "mod_revision", "version", "lease")
				})
				r.Kvs = append(r.Kvs, kv)
				return ok
			})
		case "more":
			return s.boolField(&r.More)
		case "count":
			return s.int64Field(&r.Count)
		}
		return s.other(name, "header", "kvs", "more", "count")
	})
}
