package registry

import "bytes"

// presizedDocument returns a Document whose targets, and each target's
// services, are allocated at the size the stored envelope declares, so that
// decoding into it grows no slice. Growing them one doubling at a time
// copies a fleet-size document's services (hundreds of bytes each) several
// times over: at 1,000 targets × 20 services that was a fifth of a read's
// CPU. The count comes from one pass over the bytes that follows strings
// and nesting only; decoding is correct either way (the decoder grows or
// shortens what it was given). It returns nil, for the decoder to
// allocate, when the bytes are not an envelope with a document.
func presizedDocument(envelope []byte) *Document {
	type frame struct {
		obj      bool
		key      []byte // the current key of an object (in envelope)
		expect   bool   // an object expects a key; an array expects an element
		elements int    // elements begun in an array
	}
	stack := make([]frame, 0, 8)
	var targets int
	var services []int
	sawDocument := false
	begin := func() { // a value begins at the top of the stack
		if n := len(stack); n > 0 && !stack[n-1].obj && stack[n-1].expect {
			stack[n-1].elements++
			stack[n-1].expect = false
		}
	}
	// atTargets reports whether the stack is {"document": {"targets": here.
	atTargets := func(s []frame) bool {
		return len(s) == 2 && s[0].obj && string(s[0].key) == "document" && s[1].obj && string(s[1].key) == "targets"
	}
	for i := 0; i < len(envelope); i++ {
		switch c := envelope[i]; c {
		case ' ', '\t', '\n', '\r':
		case '"':
			j := stringEnd(envelope, i+1)
			if j < 0 {
				return nil
			}
			if n := len(stack); n > 0 && stack[n-1].obj && stack[n-1].expect {
				stack[n-1].key = envelope[i+1 : j]
				stack[n-1].expect = false
				sawDocument = sawDocument || n == 1 && string(stack[0].key) == "document"
			} else {
				begin()
			}
			i = j
		case '{', '[':
			begin()
			stack = append(stack, frame{obj: c == '{', expect: true})
		case '}', ']':
			n := len(stack)
			if n == 0 {
				return nil
			}
			top := stack[n-1]
			stack = stack[:n-1]
			if !top.obj {
				switch {
				case atTargets(stack):
					targets = top.elements
				case len(stack) == 4 && atTargets(stack[:2]) && !stack[2].obj && stack[3].obj && string(stack[3].key) == "services":
					for len(services) < stack[2].elements {
						services = append(services, 0)
					}
					services[stack[2].elements-1] = top.elements
				}
			}
		case ':':
		case ',':
			if n := len(stack); n > 0 {
				stack[n-1].expect = true
			}
		default:
			begin()
			for i+1 < len(envelope) && !isDelimiter(envelope[i+1]) {
				i++
			}
		}
	}
	switch {
	case !sawDocument:
		return nil // the decoder says the envelope has no document
	case targets == 0 || targets > MaxTargets:
		return &Document{}
	}
	d := &Document{Targets: make([]Target, targets)}
	for i, n := range services {
		if i < targets && n > 0 && n <= MaxServicesPerTarget {
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
