package metrics

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// contentType is what a scrape is: Prometheus's text exposition format,
// version 0.0.4.
const contentType = "text/plain; version=0.0.4; charset=utf-8"

// exposed is one family of a scrape: it writes its HELP and TYPE lines and
// its samples, series in label value order.
type exposed interface {
	familyName() string
	appendTo(b []byte) []byte
}

// key is the label values of one series, in the order of its family's
// label names; no family has more than two labels.
type key [2]string

// family is a counter or a gauge family. A family without labels has its
// one series from the start; one with a closed label set has every series
// of the set from the start, at zero.
type family struct {
	name, help, kind string
	labels           []string
	closed           []key

	mu     sync.Mutex
	series map[key]float64
}

// newFamily returns an empty family of kind "counter" or "gauge".
func newFamily(name, help, kind string, labels ...string) *family {
	if len(labels) > len(key{}) {
		panic(fmt.Sprintf("metrics: %s has %d labels; at most %d", name, len(labels), len(key{})))
	}
	f := &family{name: name, help: help, kind: kind, labels: labels, series: map[key]float64{}}
	if len(labels) == 0 {
		f.closed = []key{{}}
	}
	f.reset()
	return f
}

// over closes the family's labels over sets, one per label: the product
// of the sets is its series, each at zero, in the order of the sets (the
// last label's values vary fastest).
func (f *family) over(sets ...[]string) *family {
	if len(sets) != len(f.labels) {
		panic(fmt.Sprintf("metrics: %s has %d labels, closed over %d sets", f.name, len(f.labels), len(sets)))
	}
	f.closed = []key{{}}
	for i, set := range sets {
		var next []key
		for _, k := range f.closed {
			for _, v := range set {
				k[i] = v
				next = append(next, k)
			}
		}
		f.closed = next
	}
	f.reset()
	return f
}

func (f *family) familyName() string { return f.name }

func (f *family) key(values []string) key {
	if len(values) != len(f.labels) {
		panic(fmt.Sprintf("metrics: %s takes %d label values, got %d", f.name, len(f.labels), len(values)))
	}
	var k key
	copy(k[:], values)
	return k
}

// add adds v to the series of values.
func (f *family) add(v float64, values ...string) {
	k := f.key(values)
	f.mu.Lock()
	f.series[k] += v
	f.mu.Unlock()
}

// set sets the series of values to v.
func (f *family) set(v float64, values ...string) {
	k := f.key(values)
	f.mu.Lock()
	f.series[k] = v
	f.mu.Unlock()
}

// value is the series of values' value, zero when it has none.
func (f *family) value(values ...string) float64 {
	k := f.key(values)
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.series[k]
}

// reset leaves the closed set's series, at zero, and no other.
func (f *family) reset() {
	f.replace(nil, nil)
}

// replace sets every series at once, so a scrape sees the family before
// or after, never half of it: the closed set's series to closed's values,
// by position in the set's order (zero past its end), and the series of
// extra to theirs; no other series is left.
func (f *family) replace(closed []float64, extra map[key]float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.series)
	for i, k := range f.closed {
		f.series[k] = 0
		if i < len(closed) {
			f.series[k] = closed[i]
		}
	}
	for k, v := range extra {
		f.series[k] += v
	}
}

func (f *family) appendTo(b []byte) []byte {
	b = appendHeader(b, f.name, f.help, f.kind)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range sortedKeys(f.series) {
		b = appendSeries(b, f.name, "", f.labels, k[:len(f.labels)], "", "")
		b = appendFloat(b, f.series[k])
	}
	return b
}

// histFamily is a histogram family with at most one label. Each series
// counts its observations per bucket (not cumulated: the scrape cumulates).
type histFamily struct {
	name, help string
	label      string // "" for none
	bounds     []float64
	les        []string // the bounds as le label values

	mu     sync.Mutex
	series map[string]*buckets
}

type buckets struct {
	counts []uint64 // per bound; above the last bound only in count
	sum    float64
	count  uint64
}

// newHistogram returns a histogram with upper bounds bounds (ascending;
// +Inf is implied) and a series at zero for each of values; label ""
// means no label, and one series.
func newHistogram(name, help string, bounds []float64, label string, values ...string) *histFamily {
	h := &histFamily{name: name, help: help, label: label, bounds: bounds, series: map[string]*buckets{}}
	for _, bound := range bounds {
		h.les = append(h.les, strconv.FormatFloat(bound, 'g', -1, 64))
	}
	if label == "" {
		values = []string{""}
	}
	for _, v := range values {
		h.series[v] = &buckets{counts: make([]uint64, len(bounds))}
	}
	return h
}

// exponential returns n bounds from start, each factor times the one
// before.
func exponential(start, factor float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = start
		start *= factor
	}
	return out
}

func (h *histFamily) familyName() string { return h.name }

// observe counts v into the series of value ("" without a label).
func (h *histFamily) observe(v float64, value string) {
	// a bound is inclusive: v falls under the first bound at or above it
	i, _ := slices.BinarySearch(h.bounds, v)
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.series[value]
	if s == nil {
		s = &buckets{counts: make([]uint64, len(h.bounds))}
		h.series[value] = s
	}
	if i < len(h.bounds) {
		s.counts[i]++
	}
	s.sum += v
	s.count++
}

// sample is the series of value's count and sum.
func (h *histFamily) sample(value string) (uint64, float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.series[value]; s != nil {
		return s.count, s.sum
	}
	return 0, 0
}

func (h *histFamily) appendTo(b []byte) []byte {
	b = appendHeader(b, h.name, h.help, "histogram")
	var names []string
	if h.label != "" {
		names = []string{h.label}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	values := make([]string, 0, len(h.series))
	for v := range h.series {
		values = append(values, v)
	}
	slices.Sort(values)
	for _, v := range values {
		s, lv := h.series[v], []string{v}[:len(names)]
		var cum uint64
		for i, le := range h.les {
			cum += s.counts[i]
			b = appendSeries(b, h.name, "_bucket", names, lv, "le", le)
			b = strconv.AppendUint(b, cum, 10)
			b = append(b, '\n')
		}
		b = appendSeries(b, h.name, "_bucket", names, lv, "le", "+Inf")
		b = strconv.AppendUint(b, s.count, 10)
		b = append(b, '\n')
		b = appendSeries(b, h.name, "_sum", names, lv, "", "")
		b = appendFloat(b, s.sum)
		b = appendSeries(b, h.name, "_count", names, lv, "", "")
		b = strconv.AppendUint(b, s.count, 10)
		b = append(b, '\n')
	}
	return b
}

// sortedKeys returns the keys of series in label value order.
func sortedKeys(series map[key]float64) []key {
	keys := make([]key, 0, len(series))
	for k := range series {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int { return slices.Compare(a[:], b[:]) })
	return keys
}

// appendHeader writes a family's HELP and TYPE lines.
func appendHeader(b []byte, name, help, kind string) []byte {
	b = append(b, "# HELP "...)
	b = append(b, name...)
	b = append(b, ' ')
	b = appendEscaped(b, help, false)
	b = append(b, "\n# TYPE "...)
	b = append(b, name...)
	b = append(b, ' ')
	b = append(b, kind...)
	return append(b, '\n')
}

// appendSeries writes a sample line up to its value: the name, its
// suffix, and the labels (names with values, then extra="extraValue"
// when extra is not empty), then the space before the value.
func appendSeries(b []byte, name, suffix string, names, values []string, extra, extraValue string) []byte {
	b = append(b, name...)
	b = append(b, suffix...)
	if len(names) > 0 || extra != "" {
		b = append(b, '{')
		for i, n := range names {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendLabel(b, n, values[i])
		}
		if extra != "" {
			if len(names) > 0 {
				b = append(b, ',')
			}
			b = appendLabel(b, extra, extraValue)
		}
		b = append(b, '}')
	}
	return append(b, ' ')
}

func appendLabel(b []byte, name, value string) []byte {
	b = append(b, name...)
	b = append(b, '=', '"')
	b = appendEscaped(b, value, true)
	return append(b, '"')
}

// appendFloat writes a sample value and ends the line. Go's shortest
// formatting is what the format reads: 1, 0.25, 1.5e+09, +Inf, NaN.
func appendFloat(b []byte, v float64) []byte {
	return append(strconv.AppendFloat(b, v, 'g', -1, 64), '\n')
}

// appendEscaped writes s as the format requires: a backslash and a new
// line escaped (and a double quote too in a label value), and any byte
// that is not UTF-8 replaced, since the format is UTF-8.
func appendEscaped(b []byte, s string, quote bool) []byte {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, '\\', '\\')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '"' && quote:
			b = append(b, '\\', '"')
		default:
			b = append(b, c)
		}
	}
	return b
}
