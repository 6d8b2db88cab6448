package etcdstore

import (
	"bytes"
	"compress/gzip"
	"compress/lzw"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
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
	// encLZW is a value packed with compress/lzw (LSB order, 8-bit
	// literals) behind its length as a uvarint. A writer packs values from
	// PackAbove bytes only while the store's packing document says so: an
	// older reader fails a listing on an encoding it does not know
	// (packing.go, docs/etcd.md).
	encLZW = 'l'
)

// lzwWriters keeps LZW writers (about 70 KB of table each) between values.
var lzwWriters sync.Pool

// lzwReaders keeps LZW readers (about 30 KB each) between values, so a
// listing of packed beacons does not allocate one per value.
var lzwReaders sync.Pool

// encodeValue returns the bytes to store for value, packed (when smaller
// so) if pack.
func encodeValue(value []byte, pack bool) ([]byte, error) {
	if pack && !bytes.HasPrefix(value, []byte(valueMarker)) {
		if packed := packLZW(value); packed != nil {
			return packed, nil
		}
	}
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
	case encLZW:
		return unpackLZW(rest[1:], limit, bound)
	default:
		return nil, fmt.Errorf("stored value has unknown encoding %q (written by a newer stado? upgrade this one)", rest[0])
	}
}

// unpackLZW reads an encLZW value: its stated length first, refused over
// bound before anything is expanded, then exactly that many bytes, and
// nothing after them.
func unpackLZW(b []byte, limit, bound int) ([]byte, error) {
	n, k := binary.Uvarint(b)
	switch {
	case k <= 0:
		return nil, errors.New("packed value: no length")
	case n > uint64(bound) && limit > 0 && bound < MaxValueSize:
		return nil, errOverBound
	case n > uint64(bound):
		return nil, fmt.Errorf("packed value states %d bytes, over %d", n, MaxValueSize)
	case n > uint64(len(b)-k)*4096:
		// one code of at most 12 bits expands to at most 4,096 bytes
		return nil, fmt.Errorf("packed value states %d bytes, more than its %d packed bytes can hold", n, len(b)-k)
	}
	src := bytes.NewReader(b[k:])
	r, _ := lzwReaders.Get().(*lzw.Reader)
	if r == nil {
		r = lzw.NewReader(src, lzw.LSB, 8).(*lzw.Reader)
	} else {
		r.Reset(src, lzw.LSB, 8)
	}
	defer lzwReaders.Put(r)
	out := make([]byte, n)
	if _, err := io.ReadFull(r, out); err != nil {
		return nil, fmt.Errorf("packed value: %w", err)
	}
	var one [1]byte
	if m, err := r.Read(one[:]); m != 0 || err != io.EOF {
		return nil, errors.New("packed value: more bytes than it states")
	}
	return out, nil
}

// packLZW returns value as an encLZW value, or nil when packing does not
// make it smaller.
func packLZW(value []byte) []byte {
	var b bytes.Buffer
	b.Grow(len(value) / 2)
	b.WriteString(valueMarker)
	b.WriteByte(encLZW)
	b.Write(binary.AppendUvarint(nil, uint64(len(value))))
	w, _ := lzwWriters.Get().(*lzw.Writer)
	if w == nil {
		w = lzw.NewWriter(&b, lzw.LSB, 8).(*lzw.Writer)
	} else {
		w.Reset(&b, lzw.LSB, 8)
	}
	defer lzwWriters.Put(w)
	if _, err := w.Write(value); err != nil {
		return nil
	}
	if err := w.Close(); err != nil {
		return nil
	}
	if b.Len() >= len(value) {
		return nil
	}
	return b.Bytes()
}
