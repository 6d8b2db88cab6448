package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Purger is a store that can forget a key entirely. Delete keeps what a
// key needs if it is ever written again (the file store's tombstone with
// the last revision); a key that is never written again — a registry
// history entry, whose key names its revision — needs none, and Purge
// leaves nothing behind. Stores without the distinction (etcd) need not
// implement it: Delete is enough there.
type Purger interface {
	Purge(ctx context.Context, key string) error
}

// Purge removes key's file and its lock file, leaving no tombstone. It is
// for keys that are never written again (history entries): a later write
// of the same key would start again at revision 1. A key that does not
// exist is no error.
func (s *FileStore) Purge(ctx context.Context, key string) error {
	p, err := s.path(key)
	if err != nil {
		return err
	}
	unlock, err := s.lock(ctx, key, p)
	if err != nil {
		return err
	}
	fence, err := fenceData(ctx, p)
	if err != nil {
		unlock()
		return fmt.Errorf("purge %s: %w", key, err)
	}
	if fence != nil {
		err = os.Remove(p)
		fence.release()
	}
	// the lock file goes while it is held: a locker that opened it before
	// finds, after locking, that it is no longer the file at the path and
	// takes the new one (safefile.Lock), so removing it is safe
	if rerr := os.Remove(s.lockPath(p)); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && err == nil {
		err = rerr
	}
	unlock()
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("purge %s: %w", key, err)
	}
	s.mu.Lock()
	delete(s.locks, key)
	s.mu.Unlock()
	return nil
}

// Forget removes a key that is never written again: Purge where the store
// has it, else Delete.
func Forget(ctx context.Context, st Store, key string) error {
	if p, ok := st.(Purger); ok {
		return p.Purge(ctx, key)
	}
	return st.Delete(ctx, key)
}
