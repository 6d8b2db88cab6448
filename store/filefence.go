package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// The sidecar lock file of a key can be removed by anyone (a tmpfiles
// cleaner, a clean-up script) while a writer holds it; a newcomer then
// creates and locks a new one and enters beside the writer. So the file
// store also fences every write on the data file itself: a writer holds an
// flock on the data file it read and replaces it by rename while holding
// it. A waiter queued on the replaced file finds, once it gets the flock,
// that the file is no longer the one at the path, and starts again on the
// new one. A key without a file is created with link(2), which fails when
// another writer created it first. Neither step depends on a file that a
// cleaner may remove: removing the data file is removing the data.

// dataFence is an flock held on a key's data file; nil holds nothing.
type dataFence struct{ f *os.File }

func (d *dataFence) release() {
	if d == nil {
		return
	}
	_ = syscall.Flock(int(d.f.Fd()), syscall.LOCK_UN)
	d.f.Close()
}

// fenceData takes an exclusive flock on the data file at p and checks it
// is still the file at p. It returns nil and no error when p does not
// exist. It waits (polling, jittered, growing to 20ms) until ctx ends.
func fenceData(ctx context.Context, p string) (*dataFence, error) {
	wait := 500 * time.Microsecond
	for {
		f, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			held, err1 := f.Stat()
			at, err2 := os.Stat(p)
			if err1 == nil && err2 == nil && os.SameFile(held, at) {
				return &dataFence{f: f}, nil
			}
			f.Close() // replaced or removed meanwhile: take the file now at p
			if err1 != nil {
				return nil, err1
			}
			if err2 != nil && !errors.Is(err2, fs.ErrNotExist) {
				return nil, err2
			}
			continue
		}
		f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return nil, fmt.Errorf("lock %s: %w", p, err)
		}
		t := time.NewTimer(wait/2 + rand.N(wait))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("lock %s: %w", p, ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, 20*time.Millisecond)
	}
}

// createExclusive writes data to a new file at p (mode 0600) through a
// temporary file and link(2), so a reader never sees it partly written. It
// reports false, and writes nothing, when p already exists.
func createExclusive(p string, data []byte) (created bool, err error) {
	dir := filepath.Dir(p)
	tmp, err := os.CreateTemp(dir, ".tmp-create-*")
	if err != nil {
		return false, err
	}
	name := tmp.Name()
	defer os.Remove(name)
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return false, err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return false, err
	}
	if err := tmp.Close(); err != nil {
		return false, err
	}
	if err := os.Link(name, p); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return false, nil
		}
		return false, err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return true, nil
}
