package printer

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// JSON writes doc, indented by two spaces a level, with "kind"
// as its first field. A struct's list fields are encoded an element at a
// time: a fleet-size list (20,000 rows, megabytes) never exists whole in
// memory, only one row's encoding does. The bytes are the ones
// json.MarshalIndent would write for doc with kind added first.
func JSON(w io.Writer, kind string, doc any) error {
	o := newJSONOut(w)
	k, _ := json.Marshal(kind)
	o.write("{\n  \"kind\": ")
	o.write(string(k))
	if fields, ok := streamedFields(doc); ok {
		for _, f := range fields {
			if f.key == `"kind"` {
				return fmt.Errorf("encode %s: the document carries a kind of its own", kind)
			}
			o.write(",\n  ")
			o.write(f.key)
			o.write(": ")
			if f.list.IsValid() {
				o.list(f.list, 1)
			} else {
				o.value(f.value, 1)
			}
		}
		o.write("\n}\n")
		return o.finish(kind)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("encode %s: %w", kind, err)
	}
	if string(b) == "null" {
		b = []byte("{}")
	}
	if len(b) < 2 || b[0] != '{' {
		return fmt.Errorf("encode %s: not a JSON object", kind)
	}
	if string(b) == "{}" {
		o.write("\n}\n")
	} else {
		o.write(",\n  ")
		// b without its opening brace: its fields follow kind's.
		o.out = indentJSON(o.out, b[1:], 1)
		o.write("\n")
	}
	return o.finish(kind)
}

// jsonOut writes one indented document in pieces, keeping the first error.
type jsonOut struct {
	w   io.Writer
	out []byte // indented bytes not yet written
	buf bytes.Buffer
	enc *json.Encoder
	err error
}

func newJSONOut(w io.Writer) *jsonOut {
	o := &jsonOut{w: w, out: make([]byte, 0, 64<<10)}
	o.enc = json.NewEncoder(&o.buf)
	return o
}

func (o *jsonOut) write(s string) {
	o.out = append(o.out, s...)
	o.flushIfFull()
}

func (o *jsonOut) flushIfFull() {
	if len(o.out) >= 32<<10 {
		o.flush()
	}
}

func (o *jsonOut) flush() {
	if o.err == nil && len(o.out) > 0 {
		_, o.err = o.w.Write(o.out)
	}
	o.out = o.out[:0]
}

// value encodes v as json.Marshal would and appends it indented from depth.
func (o *jsonOut) value(v any, depth int) {
	if o.err != nil {
		return
	}
	o.buf.Reset()
	if err := o.enc.Encode(v); err != nil { // Encode adds a newline
		o.err = err
		return
	}
	o.out = indentJSON(o.out, bytes.TrimSuffix(o.buf.Bytes(), []byte("\n")), depth)
	o.flushIfFull()
}

// list writes a non-empty slice an element at a time, as indentJSON would
// lay it out. Elements are encoded through their address, as they are when
// the slice is encoded whole (a slice's elements are addressable).
func (o *jsonOut) list(l reflect.Value, depth int) {
	o.write("[")
	for i := 0; i < l.Len() && o.err == nil; i++ {
		if i > 0 {
			o.write(",")
		}
		o.out = append(o.out, '\n')
		o.out = appendIndent(o.out, depth+1)
		o.value(l.Index(i).Addr().Interface(), depth+1)
	}
	o.out = append(o.out, '\n')
	o.out = appendIndent(o.out, depth)
	o.write("]")
}

func (o *jsonOut) finish(kind string) error {
	o.flush()
	if o.err != nil {
		return fmt.Errorf("encode %s: %w", kind, o.err)
	}
	return nil
}

func appendIndent(b []byte, depth int) []byte {
	for i := 0; i < depth; i++ {
		b = append(b, ' ', ' ')
	}
	return b
}

// streamedField is one top-level field of a document: its encoded key and
// either a non-empty list written element by element, or a value.
type streamedField struct {
	key   string
	list  reflect.Value
	value any
}

// streamedFields lists doc's fields as encoding/json would encode them,
// when doc is a struct (or a pointer to one) simple enough to be sure of
// that: exported named fields, no embedded structs, no tag option other
// than omitempty, no marshaler of its own. Otherwise ok is false and the
// document is encoded whole.
func streamedFields(doc any) (fields []streamedField, ok bool) {
	v := reflect.ValueOf(doc)
	for v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil, false
	}
	t := v.Type()
	if t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType) ||
		t.Implements(textMarshalerType) || reflect.PointerTo(t).Implements(textMarshalerType) {
		return nil, false
	}
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if sf.Anonymous {
			return nil, false
		}
		tag := sf.Tag.Get("json")
		if !sf.IsExported() || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if opts != "" && opts != "omitempty" {
			return nil, false
		}
		if name == "" {
			name = sf.Name
		}
		if !plainKey(name) {
			return nil, false
		}
		fv := v.Field(i)
		if opts == "omitempty" && emptyJSON(fv) {
			continue
		}
		f := streamedField{key: `"` + name + `"`}
		if fv.Kind() == reflect.Slice && fv.Len() > 0 && fv.Type().Elem().Kind() != reflect.Uint8 {
			f.list = fv
		} else if fv.CanAddr() {
			f.value = fv.Addr().Interface()
		} else {
			f.value = fv.Interface()
		}
		fields = append(fields, f)
	}
	return fields, true
}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// plainKey: a key encoding/json writes as it is (no escaping, a valid tag).
func plainKey(s string) bool {
	for _, c := range s {
		if !(c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

// emptyJSON is encoding/json's test for omitempty.
func emptyJSON(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return false
}

// indentJSON appends src, compact JSON as json.Marshal writes it, to dst
// indented by two spaces per level from depth, exactly as json.Indent
// with prefix "" and indent "  " would, in one pass and without
// re-validating what the encoder just wrote (json.Indent's scanner costs
// more than the encoding on a fleet-size list). src may start inside an
// object or array at depth.
func indentJSON(dst, src []byte, depth int) []byte {
	newline := func() {
		dst = append(dst, '\n')
		for i := 0; i < depth; i++ {
			dst = append(dst, ' ', ' ')
		}
	}
	inString := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		if inString {
			dst = append(dst, c)
			switch c {
			case '\\':
				i++
				if i < len(src) {
					dst = append(dst, src[i])
				}
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
			dst = append(dst, c)
		case '{', '[':
			dst = append(dst, c)
			if i+1 < len(src) && (src[i+1] == '}' || src[i+1] == ']') {
				dst = append(dst, src[i+1])
				i++
				continue
			}
			depth++
			newline()
		case '}', ']':
			depth--
			newline()
			dst = append(dst, c)
		case ',':
			dst = append(dst, c)
			newline()
		case ':':
			dst = append(dst, ':', ' ')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// WithKind encodes doc with "kind" as its first field.
func WithKind(kind string, doc any) ([]byte, error) {
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", kind, err)
	}
	if string(b) == "null" {
		b = []byte("{}")
	}
	if len(b) < 2 || b[0] != '{' {
		return nil, fmt.Errorf("encode %s: not a JSON object", kind)
	}
	k, _ := json.Marshal(kind)
	out := append([]byte(`{"kind":`), k...)
	if !bytes.Equal(b, []byte("{}")) {
		out = append(out, ',')
	}
	return append(out, b[1:]...), nil
}

// Text is the human form of a result: lines and aligned tables, sized to
// the terminal. It keeps the first write error.
//
// Text carries words from hosts and services (beacon sentences, stderr
// lines, answer bodies, unit names, refusal messages) that a terminal must
// not obey: every value it prints is escaped (Escape), so no value can
// move the cursor, clear the screen or start a line of its own. The JSON
// form is never escaped: it carries each value exactly.
type Text struct {
	w     io.Writer
	width int
	err   error
}

// New returns the text form writing to w, with tables cut to width (0: no
// cut).
func New(w io.Writer, width int) *Text { return &Text{w: w, width: width} }

// Err is the first error writing the text.
func (t *Text) Err() error { return t.err }

// Write is the last guard: control characters other than the newline and
// tab the layer itself writes are escaped.
func (t *Text) Write(p []byte) (int, error) {
	if t.err != nil {
		return 0, t.err
	}
	q := p
	if needsEscape(string(p), true) {
		q = []byte(escapeWith(string(p), true))
	}
	_, err := t.w.Write(q)
	t.err = err
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// f writes one formatted piece of text; every string, error or Stringer
// argument is escaped, so only the format itself starts lines.
func (t *Text) F(format string, args ...any) {
	for i, a := range args {
		switch v := a.(type) {
		case string:
			args[i] = Escape(v)
		case error:
			args[i] = Escape(v.Error())
		case fmt.Stringer:
			args[i] = Escape(v.String())
		}
	}
	fmt.Fprintf(t, format, args...)
}

// lines writes each line of a result's Text form.
func (t *Text) Lines(ls []string) { t.Indented("", ls) }

// indented writes each line after indent.
func (t *Text) Indented(indent string, ls []string) {
	for _, l := range ls {
		t.F("%s%s\n", indent, l)
	}
}

// table writes rows under header in aligned columns (table.go).
func (t *Text) Table(header []string, rows [][]string) { printTable(t, t.width, header, rows) }

// Escape makes s safe to print on a terminal as one line: newlines,
// carriage returns, tabs, every other control character (C0, DEL, C1),
// bidirectional and other format characters, and bytes that are not UTF-8
// are written as Go escapes (\n, \x1b, \u202e). Printable text, non-ASCII
// letters included, is left as it is.
func Escape(s string) string {
	if !needsEscape(s, false) {
		return s
	}
	return escapeWith(s, false)
}

// EscapeLines escapes each line of a multi-line message (a validation
// error lists one violation a line), keeping its line breaks.
func EscapeLines(s string) string {
	if !needsEscape(s, true) && !strings.ContainsFunc(s, func(r rune) bool { return unicode.Is(unicode.Cf, r) }) {
		return s
	}
	ls := strings.Split(s, "\n")
	for i, l := range ls {
		ls[i] = Escape(l)
	}
	return strings.Join(ls, "\n")
}

// needsEscape reports whether escapeWith would change s; layout keeps the
// newline and the tab.
func needsEscape(s string, layout bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 {
			return needsEscapeSlow(s[i:], layout)
		}
		if (c < 0x20 || c == 0x7f) && !(layout && (c == '\n' || c == '\t')) {
			return true
		}
	}
	return false
}

func needsEscapeSlow(s string, layout bool) bool {
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		if r == utf8.RuneError && n == 1 || unsafeRune(r, layout) {
			return true
		}
		s = s[n:]
	}
	return false
}

func escapeWith(s string, layout bool) string {
	const hex = "0123456789abcdef"
	b := make([]byte, 0, len(s)+16)
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && n == 1:
			b = append(b, '\\', 'x', hex[s[0]>>4], hex[s[0]&15])
		case unsafeRune(r, layout):
			q := strconv.QuoteRuneToASCII(r)
			b = append(b, q[1:len(q)-1]...)
		default:
			b = append(b, s[:n]...)
		}
		s = s[n:]
	}
	return string(b)
}

// unsafeRune: control characters and format characters (bidirectional
// overrides, zero-width joiners), which a terminal obeys or hides. layout
// is the guard on raw writes (a document printed as itself, such as
// registry pull's): it keeps the newline and the tab, and the format
// characters a value may hold, so the Text stays the document.
func unsafeRune(r rune, layout bool) bool {
	if layout {
		return r != '\n' && r != '\t' && unicode.IsControl(r)
	}
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
}
