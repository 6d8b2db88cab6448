package registry

import (
	"bytes"
	"strings"
)

// envelopeLayout is what one pass over a stored envelope's bytes finds,
// following strings and nesting only (the decoders check everything else).
type envelopeLayout struct {
	sawDocument bool
	// targets is the number of elements of document.targets, services the
	// number of services of each.
	targets  int
	services []int
	// split is true when the targets can be decoded apart: the envelope has
	// exactly one "document" and that one exactly one "targets" key (no
	// case variant or escaped spelling encoding/json would also match), the
	// value is an array, and spans holds each element's bytes; open and
	// close are the array's brackets.
	split       bool
	spans       [][2]int
	open, close int
}

// scanEnvelope lays out a stored envelope (see envelopeLayout).
func scanEnvelope(envelope []byte) envelopeLayout {
	type frame struct {
		obj      bool
		key      []byte // the current key of an object (in envelope)
		expect   bool   // an object expects a key; an array expects an element
		elements int    // elements begun in an array
	}
	var l envelopeLayout
	stack := make([]frame, 0, 8)
	documents, targetKeys := 0, 0
	broken := false
	// atTargets reports whether the stack is {"document": {"targets": here.
	atTargets := func(s []frame) bool {
		return len(s) == 2 && s[0].obj && string(s[0].key) == "document" && s[1].obj && string(s[1].key) == "targets"
	}
	inTargets := func() bool { return len(stack) == 3 && atTargets(stack[:2]) && !stack[2].obj }
	begin := func(i int, c byte) { // a value begins at i, at the top of the stack
		n := len(stack)
		if n > 0 && !stack[n-1].obj && stack[n-1].expect {
			stack[n-1].elements++
			stack[n-1].expect = false
			if inTargets() {
				l.spans = append(l.spans, [2]int{i, -1})
			}
		} else if n > 0 && !stack[n-1].obj {
			broken = true // two values without a comma
		}
		if atTargets(stack) {
			if c != '[' {
				broken = true // targets is not an array
			} else {
				l.open = i
			}
		}
	}
	// key notes a key of the envelope or of its document.
	key := func(k []byte, want string, count *int) {
		switch {
		case string(k) == want:
			*count++
		case bytes.IndexByte(k, '\\') >= 0 || strings.EqualFold(string(k), want):
			broken = true // a spelling encoding/json would also take as want
		}
	}
	// endElement closes the current element of the targets array at i.
	endElement := func(i int) {
		if n := len(l.spans); n == 0 || l.spans[n-1][1] >= 0 {
			broken = true // a comma or bracket without an element before it
			return
		}
		l.spans[len(l.spans)-1][1] = i
	}
	for i := 0; i < len(envelope); i++ {
		switch c := envelope[i]; c {
		case ' ', '\t', '\n', '\r':
		case '"':
			j := stringEnd(envelope, i+1)
			if j < 0 {
				return envelopeLayout{}
			}
			if n := len(stack); n > 0 && stack[n-1].obj && stack[n-1].expect {
				k := envelope[i+1 : j]
				stack[n-1].key = k
				stack[n-1].expect = false
				if n == 1 {
					key(k, "document", &documents)
					l.sawDocument = l.sawDocument || string(k) == "document"
				} else if n == 2 && stack[0].obj && string(stack[0].key) == "document" {
					key(k, "targets", &targetKeys)
				}
			} else {
				begin(i, c)
			}
			i = j
		case '{', '[':
			begin(i, c)
			stack = append(stack, frame{obj: c == '{', expect: true})
		case '}', ']':
			n := len(stack)
			if n == 0 {
				return envelopeLayout{}
			}
			if inTargets() {
				if stack[2].elements > 0 {
					endElement(i)
				}
				l.close = i
			}
			top := stack[n-1]
			stack = stack[:n-1]
			if !top.obj {
				switch {
				case atTargets(stack):
					l.targets = top.elements
				case len(stack) == 4 && atTargets(stack[:2]) && !stack[2].obj && stack[3].obj && string(stack[3].key) == "services":
					for len(l.services) < stack[2].elements {
						l.services = append(l.services, 0)
					}
					l.services[stack[2].elements-1] = top.elements
				}
			}
		case ':':
		case ',':
			if inTargets() {
				endElement(i)
			}
			if n := len(stack); n > 0 {
				stack[n-1].expect = true
			}
		default:
			begin(i, c)
			for i+1 < len(envelope) && !isDelimiter(envelope[i+1]) {
				i++
			}
		}
	}
	l.split = !broken && len(stack) == 0 && documents == 1 && targetKeys == 1 && l.close > l.open &&
		len(l.spans) == l.targets
	return l
}

// presized returns a Document whose targets, and each target's services,
// are allocated at the size the layout found, so that decoding into it
// grows no slice. Growing them one doubling at a time copies a fleet-size
// document's services (hundreds of bytes each) several times over. Decoding
// is correct either way (the decoder grows or shortens what it was given).
// It returns nil, for the decoder to allocate, when the bytes are not an
// envelope with a document.
func (l envelopeLayout) presized() *Document {
	switch {
	case !l.sawDocument:
		return nil // the decoder says the envelope has no document
	case l.targets == 0 || l.targets > MaxTargets:
		return &Document{}
	}
	d := &Document{Targets: make([]Target, l.targets)}
	for i, n := range l.services {
		if i < l.targets && n > 0 && n <= MaxServicesPerTarget {
			d.Targets[i].Services = make([]Service, 0, n)
		}
	}
	return d
}

func isDelimiter(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\n', '\r', ':':
		return true
	}
	return false
}

// stringEnd returns the index of the quote that closes the string whose
// content starts at from (a quote preceded by an even run of backslashes),
// or -1.
func stringEnd(b []byte, from int) int {
	for {
		k := bytes.IndexByte(b[from:], '"')
		if k < 0 {
			return -1
		}
		q := from + k
		n := 0
		for p := q - 1; p >= from && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q
		}
		from = q + 1
	}
}
