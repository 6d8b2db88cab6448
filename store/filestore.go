package store

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/wisent/stado/safefile"
)

func init() {
	RegisterBackend("file", func(_ context.Context, rest string) (Store, error) {
		return OpenFileStore(rest)
	})
}

// FileStore is the file backend (store URL file:///DIR): one file per key
// in DIR, each holding the value, its revision and its expiry; a sidecar
// lock file per key serialises compare-and-swap across goroutines and
// processes. The on-disk format is described in docs/store.md.
//
// Revisions are per key, start at 1 and grow by one with every write. A
// deleted key keeps a tombstone with its last revision, so a key created
// again continues above every revision it had before. Every write
// replaces the file atomically, so a reader sees the old or the new
// object, never a mix. Get also waits (through a shared flock on
// the key's lock file) while a writer of its key is inside, so a Get that
// begins after a write took the lock returns that write's outcome, never
// the value it is replacing; List takes no lock. Writers record
// themselves in the lock file they hold (safefile.Holder), so a lock left
// held after its holder died can be judged and cleared (Locks, and
// `stado host unlock-store --stale`). Safe for concurrent use.
type FileStore struct {
	dir string
	now func() time.Time

	mu    sync.Mutex
	locks map[string]*sync.Mutex // in-process queue in front of flock
}

var _ Store = (*FileStore)(nil)

// OpenFileStore opens (creating it with mode 0700 if needed) the file store
// in dir, which must be an absolute path.
func OpenFileStore(dir string) (*FileStore, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("file store %q: want an absolute directory (file:///DIR)", dir)
	}
	dir = filepath.Clean(dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open file store: %w", err)
	}
	return &FileStore{dir: dir, now: time.Now, locks: map[string]*sync.Mutex{}}, nil
}

// Dir is the directory the store keeps its files in.
func (s *FileStore) Dir() string { return s.dir }

// Close releases nothing: a FileStore holds no open files between calls.
func (s *FileStore) Close() error { return nil }

const objectMagic = "stado-object"

// record is one object file's content.
type record struct {
	revision int64
	expires  int64 // unix nanoseconds, 0: never
	deleted  bool  // a tombstone keeping the last revision of a deleted key
	value    []byte
}

// live reports whether the record holds a readable object at now.
func (r *record) live(now time.Time) bool {
	return r != nil && !r.deleted && (r.expires == 0 || now.UnixNano() < r.expires)
}

func encodeRecord(r record) []byte {
	state := "live"
	if r.deleted {
		state = "deleted"
	}
	header := fmt.Sprintf("%s 1 %s %d %d %d %08x\n", objectMagic, state, r.revision, r.expires,
		len(r.value), crc32.Checksum(r.value, crcTable))
	return append([]byte(header), r.value...)
}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

func decodeRecord(b []byte) (*record, error) {
	nl := bytes.IndexByte(b, '\n')
	if nl < 0 {
		return nil, errors.New("no header")
	}
	r, length, sum, err := decodeHeader(b[:nl])
	if err != nil {
		return nil, err
	}
	r.value = b[nl+1:]
	if len(r.value) != length {
		return nil, fmt.Errorf("value is %d bytes, header says %d", len(r.value), length)
	}
	if crc32.Checksum(r.value, crcTable) != sum {
		return nil, errors.New("checksum mismatch")
	}
	return &r, nil
}

// decodeHeader reads a record's header line (without its newline): the
// record without its value, the value's length and its checksum.
func decodeHeader(line []byte) (r record, length int, sum uint32, err error) {
	var (
		magic, state string
		format       int
	)
	n, err := fmt.Sscanf(string(line), "%s %d %s %d %d %d %x", &magic, &format, &state, &r.revision, &r.expires, &length, &sum)
	if err != nil || n != 7 || magic != objectMagic || format != 1 || (state != "live" && state != "deleted") {
		return record{}, 0, 0, fmt.Errorf("bad header %q", line)
	}
	if r.revision < 1 {
		return record{}, 0, 0, fmt.Errorf("revision %d", r.revision)
	}
	r.deleted = state == "deleted"
	return r, length, sum, nil
}

// escapeKey maps a key to one file name: bytes outside [A-Za-z0-9._-]
// become %XX, '/' becomes '~', and a leading '.' is escaped so that data
// files never start with '.', which marks lock and temporary files.
func escapeKey(key string) string {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c == '/':
			b.WriteByte('~')
		case c == '.' && i == 0:
			b.WriteString("%2E")
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

func unescapeKey(name string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		switch c := name[i]; c {
		case '~':
			b.WriteByte('/')
		case '%':
			if i+2 >= len(name) {
				return "", false
			}
			v, err := hex.DecodeString(name[i+1 : i+3])
			if err != nil {
				return "", false
			}
			b.WriteByte(v[0])
			i += 2
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}

func (s *FileStore) path(key string) (string, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	name := escapeKey(key)
	if len(name) > 200 {
		return "", fmt.Errorf("key %q: %d bytes once escaped for a file name, at most 200: %w", key, len(name), ErrInvalidKey)
	}
	return filepath.Join(s.dir, name), nil
}

// read returns the record at p, or nil when the file does not exist.
func readRecord(p string) (*record, error) {
	r, _, err := readBoundedRecord(p, 0)
	return r, err
}

// readBoundedRecord is readRecord refusing a file over bound bytes (bound >
// 0) with errOverBound and its size, before reading it.
func readBoundedRecord(p string, bound int64) (*record, int64, error) {
	b, size, err := readInto(p, nil, bound)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, size, err
	}
	r, err := decodeRecord(b)
	if err != nil {
		return nil, size, fmt.Errorf("object file %s is corrupt: %v", p, err)
	}
	return r, size, nil
}

// Get returns the object at key, or an error wrapping ErrNotFound.
func (s *FileStore) Get(ctx context.Context, key string) (Object, error) {
	return s.GetBounded(ctx, key, 0)
}

// GetBounded is Get refusing, with a *TooLargeError and without reading
// it, an object file too large to hold a value of max bytes (max > 0).
func (s *FileStore) GetBounded(ctx context.Context, key string, max int64) (Object, error) {
	p, err := s.path(key)
	if err != nil {
		return Object{}, err
	}
	if err := ctx.Err(); err != nil {
		return Object{}, err
	}
	// wait until no writer of key is inside (see the type's doc)
	runlock, err := safefile.RLock(ctx, s.lockPath(p))
	if err != nil {
		return Object{}, fmt.Errorf("get %s: %w", key, err)
	}
	r, size, err := readBoundedRecord(p, recordBound(max))
	runlock()
	if errors.Is(err, errOverBound) {
		return Object{}, fmt.Errorf("get %s: %w", key, &TooLargeError{Key: key, Size: size, Max: max})
	}
	if err != nil {
		return Object{}, fmt.Errorf("get %s: %w", key, err)
	}
	if !r.live(s.now()) {
		return Object{}, fmt.Errorf("get %s: %w", key, ErrNotFound)
	}
	if max > 0 && int64(len(r.value)) > max {
		return Object{}, fmt.Errorf("get %s: %w", key, &TooLargeError{Key: key, Size: int64(len(r.value)), Max: max})
	}
	return Object{Key: key, Value: r.value, Revision: r.revision}, nil
}

// Revision returns key's revision from its record's header line alone, or
// an error wrapping ErrNotFound; it makes FileStore a RevisionReader.
func (s *FileStore) Revision(ctx context.Context, key string) (int64, error) {
	p, err := s.path(key)
	if err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	runlock, err := safefile.RLock(ctx, s.lockPath(p))
	if err != nil {
		return 0, fmt.Errorf("get %s: %w", key, err)
	}
	defer runlock()
	r, err := readHeader(p)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("get %s: %w", key, ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("get %s: %w", key, err)
	}
	if !r.live(s.now()) {
		return 0, fmt.Errorf("get %s: %w", key, ErrNotFound)
	}
	return r.revision, nil
}

// readHeader reads only the header line of the object file p: its
// revision, state and expiry, not its value.
func readHeader(p string) (record, error) {
	f, err := os.Open(p)
	if err != nil {
		return record{}, err
	}
	defer f.Close()
	var buf [256]byte // a header line is under 100 bytes
	n, err := io.ReadFull(f, buf[:])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return record{}, err
	}
	nl := bytes.IndexByte(buf[:n], '\n')
	if nl < 0 {
		return record{}, fmt.Errorf("object file %s is corrupt: no header", p)
	}
	r, _, _, err := decodeHeader(buf[:nl])
	if err != nil {
		return record{}, fmt.Errorf("object file %s is corrupt: %v", p, err)
	}
	return r, nil
}

// CompareAndSwap writes value at key if its revision is expect (0: absent).
func (s *FileStore) CompareAndSwap(ctx context.Context, key string, value []byte, expect int64, opts PutOptions) (int64, error) {
	return s.write(ctx, key, value, &expect, opts)
}

// Put writes value at key whatever it holds.
func (s *FileStore) Put(ctx context.Context, key string, value []byte, opts PutOptions) (int64, error) {
	return s.write(ctx, key, value, nil, opts)
}

func (s *FileStore) write(ctx context.Context, key string, value []byte, expect *int64, opts PutOptions) (int64, error) {
	p, err := s.path(key)
	if err != nil {
		return 0, err
	}
	if expect != nil && *expect < 0 {
		return 0, fmt.Errorf("compare-and-swap %s: expected revision %d is negative", key, *expect)
	}
	unlock, err := s.lock(ctx, key, p)
	if err != nil {
		return 0, err
	}
	defer unlock()
	for {
		fence, err := fenceData(ctx, p)
		if err != nil {
			return 0, fmt.Errorf("write %s: %w", key, err)
		}
		rev, again, err := s.writeFenced(key, p, value, expect, opts, fence)
		fence.release()
		if !again {
			return rev, err
		}
	}
}

// writeFenced is one attempt of write while fence (nil: the key has no
// file yet) holds the data file. again reports that the file appeared or
// changed under the attempt, which must then start over.
func (s *FileStore) writeFenced(key, p string, value []byte, expect *int64, opts PutOptions, fence *dataFence) (rev int64, again bool, err error) {
	cur, err := readRecord(p)
	if err != nil {
		return 0, false, fmt.Errorf("write %s: %w", key, err)
	}
	if (cur == nil) != (fence == nil) {
		return 0, true, nil
	}
	now := s.now()
	var got, next int64 = 0, 1
	if cur != nil {
		next = cur.revision + 1
		if cur.live(now) {
			got = cur.revision
		}
	}
	if expect != nil && *expect != got {
		return 0, false, &ConflictError{Key: key, Want: *expect, Got: got}
	}
	rec := record{revision: next, value: value}
	if opts.TTL > 0 {
		rec.expires = now.Add(opts.TTL).UnixNano()
	}
	if fence == nil {
		created, err := createExclusive(p, encodeRecord(rec))
		if err != nil {
			return 0, false, fmt.Errorf("write %s: %w", key, err)
		}
		return next, !created, nil
	}
	if err := safefile.Write(p, encodeRecord(rec), 0o600); err != nil {
		return 0, false, fmt.Errorf("write %s: %w", key, err)
	}
	return next, false, nil
}

// Delete removes key, leaving a tombstone that keeps its last revision.
func (s *FileStore) Delete(ctx context.Context, key string) error {
	p, err := s.path(key)
	if err != nil {
		return err
	}
	unlock, err := s.lock(ctx, key, p)
	if err != nil {
		return err
	}
	defer unlock()
	fence, err := fenceData(ctx, p)
	if err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	if fence == nil {
		return fmt.Errorf("delete %s: %w", key, ErrNotFound)
	}
	defer fence.release()
	cur, err := readRecord(p)
	if err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	if cur == nil || cur.deleted {
		return fmt.Errorf("delete %s: %w", key, ErrNotFound)
	}
	live := cur.live(s.now())
	if err := safefile.Write(p, encodeRecord(record{revision: cur.revision, deleted: true}), 0o600); err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	if !live {
		return fmt.Errorf("delete %s: %w", key, ErrNotFound)
	}
	return nil
}

// List returns the live objects whose keys start with prefix, by key.
func (s *FileStore) List(ctx context.Context, prefix string) ([]Object, error) {
	var out []Object
	err := s.each(ctx, prefix, func(key, p string, now time.Time) error {
		r, err := readRecord(p)
		if err != nil {
			return err
		}
		if r != nil && r.live(now) {
			out = append(out, Object{Key: key, Value: r.value, Revision: r.revision})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// Keys returns the keys List would return, reading only each object
// file's header line: the value and its checksum are not read, so a
// corrupt value is found by the reader of the value, not here.
func (s *FileStore) Keys(ctx context.Context, prefix string) ([]string, error) {
	var out []string
	err := s.each(ctx, prefix, func(key, p string, now time.Time) error {
		r, err := readHeader(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed since the directory was read
		}
		if err != nil {
			return err
		}
		if r.live(now) {
			out = append(out, key)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(out)
	return out, nil
}

// each calls fn with the key and object file of every data file whose key
// starts with prefix.
func (s *FileStore) each(ctx context.Context, prefix string, fn func(key, p string, now time.Time) error) error {
	if err := validatePrefix(prefix); err != nil {
		return err
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", prefix, err)
	}
	now := s.now()
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || !e.Type().IsRegular() {
			continue
		}
		key, ok := unescapeKey(name)
		if !ok || !strings.HasPrefix(key, prefix) || ValidateKey(key) != nil {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(key, filepath.Join(s.dir, name), now); err != nil {
			return fmt.Errorf("list %s: %w", prefix, err)
		}
	}
	return nil
}

// lock takes the in-process mutex of key, then the file lock on its
// sidecar lock file (never the data file, which rename replaces) through
// safefile.Lock, which gives up when ctx ends. The mutex queues this
// process's writers so only one of them polls the file lock at a time. The
// file lock dies with the process that holds it.
func (s *FileStore) lock(ctx context.Context, key, p string) (func(), error) {
	s.mu.Lock()
	m, ok := s.locks[key]
	if !ok {
		m = &sync.Mutex{}
		s.locks[key] = m
	}
	s.mu.Unlock()
	m.Lock()
	unlock, err := safefile.Lock(ctx, s.lockPath(p))
	if err != nil {
		m.Unlock()
		return nil, fmt.Errorf("lock %s: %w", key, err)
	}
	return func() {
		unlock()
		m.Unlock()
	}, nil
}

// lockPrefix starts the name of every key's sidecar lock file.
const lockPrefix = ".lock~"

// lockPath is the sidecar lock file of the object file p.
func (s *FileStore) lockPath(p string) string {
	return filepath.Join(filepath.Dir(p), lockPrefix+filepath.Base(p))
}

// StoreLock is one key's sidecar lock file in a file store.
type StoreLock struct {
	Key  string // the key it guards ("" when its name is not a key's)
	Path string
}

// Locks lists the sidecar lock files in the store's directory, by key,
// for `stado host unlock-store`. It reads names only, takes no lock and
// judges nothing (safefile.InspectLock does).
func (s *FileStore) Locks() ([]StoreLock, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("list locks of %s: %w", s.dir, err)
	}
	var out []StoreLock
	for _, e := range entries {
		name, ok := strings.CutPrefix(e.Name(), lockPrefix)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		key, ok := unescapeKey(name)
		if !ok || ValidateKey(key) != nil {
			key = ""
		}
		out = append(out, StoreLock{Key: key, Path: filepath.Join(s.dir, e.Name())})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// LockReport is one sidecar lock file of a file store as ClearStaleLocks
// judged it: the key it guards and safefile's verdict.
type LockReport struct {
	Key string `json:"key,omitempty"`
	safefile.LockReport
}

// ClearStaleLocks judges the sidecar lock files of the keys named (every
// lock file of the store when keys is empty) and removes each one whose
// recorded holder is gone and took it at least olderThan ago
// (safefile.ClearStale); live, free and unjudgeable locks are reported and
// kept. A named key without a lock file is reported as free. The error is
// only for a directory or file that cannot be read; the reports gathered
// so far come with it.
func (s *FileStore) ClearStaleLocks(keys []string, olderThan time.Duration) ([]LockReport, error) {
	var locks []StoreLock
	if len(keys) == 0 {
		var err error
		if locks, err = s.Locks(); err != nil {
			return nil, err
		}
	}
	for _, k := range keys {
		p, err := s.path(k)
		if err != nil {
			return nil, err
		}
		locks = append(locks, StoreLock{Key: k, Path: s.lockPath(p)})
	}
	out := make([]LockReport, 0, len(locks))
	for _, l := range locks {
		r, err := safefile.ClearStale(l.Path, olderThan, s.now())
		if errors.Is(err, fs.ErrNotExist) {
			r = safefile.LockReport{File: l.Path, State: safefile.LockFree, Note: "free: no lock file"}
		} else if err != nil {
			return out, err
		}
		out = append(out, LockReport{Key: l.Key, LockReport: r})
	}
	return out, nil
}
