package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Visitor is a Store that can hand every object under a prefix to a
// function without first holding them all in memory. The read half visits
// a thousand beacons on every call; reading each into a buffer its worker
// reuses keeps megabytes of copies out of a short-lived process.
type Visitor interface {
	// Visit calls fn once for every live object under prefix, from up to
	// workers goroutines at once, in no particular order. obj.Value is
	// valid only until fn returns. It stops at the first error reading the
	// store, which it returns as List would.
	Visit(ctx context.Context, prefix string, workers int, fn func(obj Object)) error
}

// Visit calls fn for every live object under prefix in st, as
// Visitor.Visit does; a store that is no Visitor is listed first.
func Visit(ctx context.Context, st Store, prefix string, workers int, fn func(obj Object)) error {
	if v, ok := st.(Visitor); ok {
		return v.Visit(ctx, prefix, workers, fn)
	}
	objs, err := st.List(ctx, prefix)
	if err != nil {
		return err
	}
	parallel(len(objs), workers, func(i int, _ *[]byte) error {
		fn(objs[i])
		return nil
	})
	return nil
}

// parallel runs do(i) for i in [0, n) on up to workers goroutines, each
// with a buffer of its own, and returns the first error.
func parallel(n, workers int, do func(i int, buf *[]byte) error) error {
	workers = max(1, min(workers, n))
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for i := w; i < n; i += workers {
				if err := do(i, &buf); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// Visit reads every object file under prefix into a buffer of its
// worker's, without the shared lock a Get takes: like List, it reads each
// file once as rename left it.
func (s *FileStore) Visit(ctx context.Context, prefix string, workers int, fn func(obj Object)) error {
	return s.VisitBounded(ctx, prefix, workers, 0, fn, nil)
}

// VisitBounded is Visit with a bound on each value (max > 0): a file larger
// than a record of max bytes is handed to tooLarge by its size and never
// read.
func (s *FileStore) VisitBounded(ctx context.Context, prefix string, workers int, max int64, fn func(obj Object), tooLarge func(*TooLargeError)) error {
	if err := validatePrefix(prefix); err != nil {
		return err
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", prefix, err)
	}
	type file struct{ key, name string }
	var files []file
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || !e.Type().IsRegular() {
			continue
		}
		if key, ok := unescapeKey(name); ok && strings.HasPrefix(key, prefix) && ValidateKey(key) == nil {
			files = append(files, file{key, name})
		}
	}
	now := s.now()
	err = parallel(len(files), workers, func(i int, buf *[]byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		p := filepath.Join(s.dir, files[i].name)
		b, size, err := readInto(p, *buf, recordBound(max))
		*buf = b
		if errors.Is(err, fs.ErrNotExist) {
			return nil // deleted since the directory was read
		}
		if errors.Is(err, errOverBound) {
			tooLarge(&TooLargeError{Key: files[i].key, Size: size, Max: max})
			return nil
		}
		if err != nil {
			return err
		}
		r, err := decodeRecord(b)
		if err != nil {
			return fmt.Errorf("object file %s is corrupt: %v", p, err)
		}
		switch {
		case !r.live(now):
		case max > 0 && int64(len(r.value)) > max:
			tooLarge(&TooLargeError{Key: files[i].key, Size: int64(len(r.value)), Max: max})
		default:
			fn(Object{Key: files[i].key, Value: r.value, Revision: r.revision})
		}
		return nil
	})
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return err
		}
		return fmt.Errorf("list %s: %w", prefix, err)
	}
	return nil
}

// recordHeaderMax bounds an object file's header line (magic, state,
// revision, expiry, length and checksum), so a file over a value bound
// plus this is over the bound whatever its header says.
const recordHeaderMax = 128

// recordBound is the largest file that can hold a value of at most max
// bytes (0: no bound).
func recordBound(max int64) int64 {
	if max <= 0 {
		return 0
	}
	return max + recordHeaderMax
}

// errOverBound: a file is larger than its reader's bound; nothing was read.
var errOverBound = errors.New("over the reader's bound")

// readInto reads the file at p into buf (grown when too small) and returns
// its contents and its size. With bound > 0, a file larger than bound is
// not read: errOverBound, with its size.
func readInto(p string, buf []byte, bound int64) ([]byte, int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return buf[:0], 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return buf[:0], 0, err
	}
	size := st.Size()
	if bound > 0 && size > bound {
		return buf[:0], size, errOverBound
	}
	if want := int(size) + 512; cap(buf) < want {
		buf = make([]byte, 0, want)
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			if bound > 0 && int64(len(buf)) > bound {
				return buf[:0], int64(len(buf)), errOverBound // it grew past the bound while read
			}
			buf = append(buf, 0)[:len(buf)] // the file grew: room for more
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, size, nil
		}
		if err != nil {
			return buf[:0], size, err
		}
	}
}
