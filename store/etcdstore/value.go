package etcdstore

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Stored values. etcd refuses a request larger than its --max-request-bytes
// (1.5 MiB by default), and the registry of a 1,000-host fleet is larger
// than that as JSON. Values from CompressAbove bytes up are therefore kept
// gzip-compressed behind a marker; smaller values are kept verbatim so that
// etcdctl shows beacons and the like as they are. A value that happens to
// begin with the marker is kept behind the marker too, so reading back is
// never ambiguous.
const (
	// CompressAbove is the size from which values are stored compressed.
	CompressAbove = 128 << 10
	// MaxValueSize bounds a value once decompressed, so that a corrupt or
	// hostile object cannot exhaust memory.
	MaxValueSize = 512 << 20

	valueMarker = "\x00stado-value\x00"
	encRaw      = 'r'
	encGzip     = 'z'
)

// encodeValue returns the bytes to store for value.
func encodeValue(value []byte) ([]byte, error) {
	switch {
	case len(value) >= CompressAbove:
		var b bytes.Buffer
		b.Grow(len(value)/8 + len(valueMarker) + 1)
		b.WriteString(valueMarker)
		b.WriteByte(encGzip)
		w := gzip.NewWriter(&b)
		if _, err := w.Write(value); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return b.Bytes(), nil
	case bytes.HasPrefix(value, []byte(valueMarker)):
		out := make([]byte, 0, len(valueMarker)+1+len(value))
		out = append(out, valueMarker...)
		out = append(out, encRaw)
		return append(out, value...), nil
	default:
		return value, nil
	}
}

// decodeValue returns the value stored as b.
func decodeValue(b []byte) ([]byte, error) { return decodeValueMax(b, 0) }

// errOverBound: a value is larger than its reader's bound.
var errOverBound = errors.New("over the reader's bound")

// decodeValueMax is decodeValue refusing (errOverBound) a value over limit
// bytes (limit > 0), a compressed one as soon as it expands past it.
func decodeValueMax(b []byte, limit int) ([]byte, error) {
	bound := MaxValueSize
	if limit > 0 {
		bound = min(limit, MaxValueSize)
	}
	rest, ok := bytes.CutPrefix(b, []byte(valueMarker))
	if !ok {
		if limit > 0 && len(b) > limit {
			return nil, errOverBound
		}
		return b, nil
	}
	if len(rest) == 0 {
		return nil, errors.New("stored value has a marker but no encoding")
	}
	switch rest[0] {
	case encRaw:
		if limit > 0 && len(rest)-1 > limit {
			return nil, errOverBound
		}
		return rest[1:], nil
	case encGzip:
		r, err := gzip.NewReader(bytes.NewReader(rest[1:]))
		if err != nil {
			return nil, fmt.Errorf("compressed value: %w", err)
		}
		// The gzip trailer says how long the value is: read it into one
		// buffer of that size, not one doubled a dozen times. The hint is
		// only trusted as far as deflate can expand (1032:1).
		var out bytes.Buffer
		if n := len(rest); n >= 4 {
			size := int(binary.LittleEndian.Uint32(rest[n-4:]))
			out.Grow(min(size, 1032*n, bound) + bytes.MinRead)
		}
		_, err = out.ReadFrom(io.LimitReader(r, int64(bound)+1))
		if err != nil {
			return nil, fmt.Errorf("compressed value: %w", err)
		}
		if limit > 0 && out.Len() > bound {
			return nil, errOverBound
		}
		if out.Len() > MaxValueSize {
			return nil, fmt.Errorf("compressed value expands beyond %d bytes", MaxValueSize)
		}
		return out.Bytes(), nil
	default:
		return nil, fmt.Errorf("stored value has unknown encoding %q", rest[0])
	}
}
