package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Document formats understood by Parse and written by Marshal.
const (
	FormatYAML = "yaml"
	FormatJSON = "json"
)

// ParseError is a document that could not be read at all: not YAML or
// JSON, more than one document, or a value of the wrong shape the field
// walk could not place. It unwraps to ErrInvalid.
type ParseError struct {
	Source string // file name or "registry"; may be empty
	Line   int    // 1-based line, 0 when unknown
	Msg    string
}

func (e *ParseError) Error() string {
	var b strings.Builder
	if e.Source != "" {
		b.WriteString(e.Source + ": ")
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *ParseError) Unwrap() error { return ErrInvalid }

var utf8BOM = []byte("\xef\xbb\xbf")

// DetectFormat says whether data is JSON (its first non-space byte is '{')
// or YAML (anything else).
func DetectFormat(data []byte) string {
	trimmed := bytes.TrimLeft(bytes.TrimPrefix(data, utf8BOM), " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '{' {
		return FormatJSON
	}
	return FormatYAML
}

// Parse reads one registry document from data, YAML or JSON (detected by
// DetectFormat). Unknown fields, values of the wrong type, an empty input
// and more than one document are refused: unknown fields and wrong types
// as a *ValidationError naming each field path, a document past the parse
// budget as a *BudgetError (before any decoding), the rest as a *ParseError.
// Both unwrap to ErrInvalid. Parse does not validate; call Validate.
// source names the input in errors and may be empty.
func Parse(data []byte, source string) (d *Document, err error) {
	defer func() {
		// A decoder fault on hostile input is a refusal, never a crash of
		// the host process that read the store.
		if r := recover(); r != nil {
			d, err = nil, &ParseError{Source: source, Msg: fmt.Sprintf("document cannot be decoded: %v", r)}
		}
	}()
	// One rule for both formats: a UTF-8 byte-order mark at the start is
	// read as nothing (editors on some systems write one); anywhere else it
	// is part of the text and refused by the decoder.
	data = bytes.TrimPrefix(data, utf8BOM)
	// The size and the parse budget (budget.go) are checked on the bytes
	// before any decoder builds a tree.
	if err := CheckParseBudget(data, source); err != nil {
		return nil, err
	}
	if DetectFormat(data) == FormatJSON {
		return parseJSON(data, source)
	}
	return parseYAML(data, source)
}

func parseYAML(data []byte, source string) (*Document, error) {
	// One parse into the node tree, then two readings of it: the walk
	// against the Document type names every unknown field and every value
	// of the wrong type (a number with a fraction where an integer is
	// expected included: yaml.v3 would truncate 1.5 to 1), then the typed
	// decode.
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	err := dec.Decode(&root)
	if errors.Is(err, io.EOF) {
		return nil, &ParseError{Source: source, Msg: "empty document"}
	}
	if err != nil {
		return nil, &ParseError{Source: source, Line: yamlLine(err.Error()), Msg: stripYAMLPrefix(err.Error())}
	}
	var rest yaml.Node
	if err := dec.Decode(&rest); !errors.Is(err, io.EOF) {
		line := rest.Line
		if err != nil {
			line = yamlLine(err.Error())
		}
		return nil, &ParseError{Source: source, Line: line, Msg: "more than one document; a registry is exactly one"}
	}
	if len(root.Content) == 0 {
		return nil, &ParseError{Source: source, Msg: "empty document"}
	}
	var vs []Violation
	walkYAML(root.Content[0], reflect.TypeOf(Document{}), "", &vs)
	if len(vs) > 0 {
		return nil, &ValidationError{Source: source, Violations: vs}
	}
	var d Document
	if err := root.Decode(&d); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			msg := strings.Join(te.Errors, "; ")
			return nil, &ParseError{Source: source, Line: yamlLine(msg), Msg: stripYAMLPrefix(msg)}
		}
		return nil, &ParseError{Source: source, Line: yamlLine(err.Error()), Msg: stripYAMLPrefix(err.Error())}
	}
	return &d, nil
}

func parseJSON(data []byte, source string) (*Document, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var d Document
	if err := dec.Decode(&d); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) || errors.Is(err, io.ErrUnexpectedEOF) {
			line := 0
			if se != nil {
				line = lineAt(data, se.Offset)
			}
			return nil, &ParseError{Source: source, Line: line, Msg: strings.TrimPrefix(err.Error(), "json: ")}
		}
		// Unknown fields and wrong types: walk the generic tree to name
		// every offending field path at once.
		var tree any
		gen := json.NewDecoder(bytes.NewReader(data))
		gen.UseNumber()
		if gen.Decode(&tree) == nil {
			var vs []Violation
			walkJSON(tree, reflect.TypeOf(Document{}), "", &vs)
			if len(vs) > 0 {
				return nil, &ValidationError{Source: source, Violations: vs}
			}
		}
		return nil, &ParseError{Source: source, Line: lineAt(data, dec.InputOffset()), Msg: strings.TrimPrefix(err.Error(), "json: ")}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, &ParseError{Source: source, Line: lineAt(data, dec.InputOffset()), Msg: "more than one document; a registry is exactly one"}
	}
	if vs := jsonKeyViolations(data); len(vs) > 0 {
		return nil, &ValidationError{Source: source, Violations: vs}
	}
	return &d, nil
}

// fieldsOf maps the tag names (yaml or json) of a struct type to fields.
func fieldsOf(t reflect.Type, tag string) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get(tag), ",")
		if name == "" && f.Anonymous && f.Type.Kind() == reflect.Struct {
			// An embedded struct (yaml ",inline"; promoted in JSON): its
			// fields sit beside the others.
			for k, v := range fieldsOf(f.Type, tag) {
				out[k] = v
			}
			continue
		}
		if name == "" || name == "-" {
			continue
		}
		out[name] = f
	}
	return out
}

func joinPath(base, field string) string {
	if base == "" {
		return field
	}
	return base + "." + field
}

func kindWord(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Struct:
		return "a mapping"
	case reflect.Map:
		return "a mapping of strings"
	case reflect.Slice:
		return "a list"
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64:
		return "an integer"
	case reflect.Bool:
		return "true or false"
	}
	return t.String()
}

func walkYAML(n *yaml.Node, t reflect.Type, path string, vs *[]Violation) {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	at := func(msg string) {
		p := path
		if p == "" {
			p = "(document)"
		}
		*vs = append(*vs, Violation{Path: p, Message: fmt.Sprintf("%s (line %d)", msg, n.Line)})
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // null is the zero value
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			at("want " + kindWord(t))
			return
		}
		fields := fieldsOf(t, "yaml")
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
				// "<<: *defaults" merges a mapping (or a list of them)
				// into this one: its fields are this struct's.
				for v.Kind == yaml.AliasNode && v.Alias != nil {
					v = v.Alias
				}
				if v.Kind == yaml.SequenceNode {
					for _, m := range v.Content {
						walkYAML(m, t, path, vs)
					}
				} else {
					walkYAML(v, t, path, vs)
				}
				continue
			}
			f, ok := fields[k.Value]
			if !ok {
				*vs = append(*vs, Violation{Path: joinPath(path, k.Value), Message: fmt.Sprintf("unknown field (line %d)", k.Line)})
				continue
			}
			walkYAML(v, f.Type, joinPath(path, k.Value), vs)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			at("want " + kindWord(t))
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			walkYAML(n.Content[i+1], t.Elem(), path+"."+n.Content[i].Value, vs)
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			at("want " + kindWord(t))
			return
		}
		for i, c := range n.Content {
			walkYAML(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i), vs)
		}
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			at("want a string")
		}
	case reflect.Int, reflect.Int64:
		if n.Kind != yaml.ScalarNode {
			at("want an integer")
			return
		}
		// yaml.v3 would store 1.5 in an int as 1; JSON refuses it, and so
		// does this reading: only an integer (in range) is one.
		var x int64
		if err := n.Decode(&x); err != nil || n.ShortTag() != "!!int" {
			at(fmt.Sprintf("want an integer, got %q", n.Value))
		}
	case reflect.Bool:
		var b bool
		if n.Kind != yaml.ScalarNode || n.Decode(&b) != nil {
			at(fmt.Sprintf("want true or false, got %q", n.Value))
		}
	}
}

func walkJSON(v any, t reflect.Type, path string, vs *[]Violation) {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	at := func(msg string) {
		p := path
		if p == "" {
			p = "(document)"
		}
		*vs = append(*vs, Violation{Path: p, Message: msg})
	}
	if v == nil {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			at("want " + kindWord(t))
			return
		}
		fields := fieldsOf(t, "json")
		for _, k := range sortedKeys(m) {
			f, ok := fields[k]
			if !ok {
				*vs = append(*vs, Violation{Path: joinPath(path, k), Message: "unknown field"})
				continue
			}
			walkJSON(m[k], f.Type, joinPath(path, k), vs)
		}
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			at("want " + kindWord(t))
			return
		}
		for _, k := range sortedKeys(m) {
			walkJSON(m[k], t.Elem(), path+"."+k, vs)
		}
	case reflect.Slice:
		s, ok := v.([]any)
		if !ok {
			at("want " + kindWord(t))
			return
		}
		for i, c := range s {
			walkJSON(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i), vs)
		}
	case reflect.String:
		if _, ok := v.(string); !ok {
			at("want a string")
		}
	case reflect.Int, reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			at("want an integer")
			return
		}
		if _, err := strconv.ParseInt(string(n), 10, 64); err != nil {
			at(fmt.Sprintf("want an integer, got %s", n))
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			at("want true or false")
		}
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// yamlLine extracts N from a yaml.v3 message "yaml: line N: ...".
func yamlLine(msg string) int {
	i := strings.Index(msg, "line ")
	if i < 0 {
		return 0
	}
	rest := msg[i+len("line "):]
	j := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
	if j <= 0 {
		return 0
	}
	n, _ := strconv.Atoi(rest[:j])
	return n
}

func stripYAMLPrefix(msg string) string {
	msg = strings.TrimPrefix(msg, "yaml: ")
	if strings.HasPrefix(msg, "line ") {
		if _, after, ok := strings.Cut(msg, ": "); ok {
			return after
		}
	}
	return msg
}

func lineAt(data []byte, offset int64) int {
	if offset < 0 {
		return 0
	}
	if offset > int64(len(data)) {
		offset = int64(len(data))
	}
	return bytes.Count(data[:offset], []byte("\n")) + 1
}

// Marshal renders d as format (FormatYAML or FormatJSON). The output is
// byte-deterministic: fields in declaration order, env keys sorted.
func Marshal(d *Document, format string) ([]byte, error) {
	switch format {
	case FormatJSON:
		b, err := json.MarshalIndent(d, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("marshal registry as json: %w", err)
		}
		return append(b, '\n'), nil
	case FormatYAML:
		var buf bytes.Buffer
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		if err := enc.Encode(d); err != nil {
			return nil, fmt.Errorf("marshal registry as yaml: %w", err)
		}
		if err := enc.Close(); err != nil {
			return nil, fmt.Errorf("marshal registry as yaml: %w", err)
		}
		return buf.Bytes(), nil
	default:
		return nil, fmt.Errorf("marshal registry: unknown format %q (want yaml or json)", format)
	}
}
