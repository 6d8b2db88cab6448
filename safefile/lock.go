package safefile

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"syscall"
	"time"
)

// ErrLocked is returned (wrapped) by TryLock when another open file
// description holds the lock.
var ErrLocked = errors.New("lock is held")

// Back-off between non-blocking attempts of Lock: the first wait is about
// lockFirstWait, each next one doubles up to lockMaxWait, and every wait is
// jittered (half to one and a half times) so waiters do not move in step.
const (
	lockFirstWait = 500 * time.Microsecond
	lockMaxWait   = 20 * time.Millisecond
)

// Lock takes an exclusive flock(2) on the lock file at path, creating it
// (mode 0600) when it is missing; its directory must exist. Pass a sidecar
// such as data+".lock", never the data file itself, which a rename
// replaces. Lock returns the function that releases the lock; call it
// exactly once. The lock belongs to the open file, so it also serialises
// goroutines of one process, and it dies with the process.
//
// The lock is tried without blocking and tried again after a short,
// growing, jittered wait until it is free or ctx ends; then the error
// wraps ctx.Err(). Any other failure wraps the *fs.PathError or errno.
//
// Once it holds the flock, Lock checks that the file it locked is still the
// file at path (same device and inode). When the file was removed or
// replaced in between, the flock guards nothing anyone else will take, so
// Lock lets it go and starts again on the file now at path. This is what
// makes removing the lock file safe for whoever removes it while holding
// the lock (Lock, os.Remove, unlock): a waiter that was queued on the old
// file never enters beside a newcomer that created a new one. A file
// removed by someone who does not hold the lock cannot be protected this
// way: a process already inside keeps the old file while a newcomer locks a
// new one. Safe for concurrent use.
func Lock(ctx context.Context, path string) (unlock func(), err error) {
	return retry(ctx, path, TryLock)
}

// TryLock is Lock without waiting: it takes the lock on the file at path
// if it is free, and otherwise returns an error wrapping ErrLocked at once.
// It checks, like Lock, that the locked file is still the one at path.
func TryLock(path string) (unlock func(), err error) {
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if openedHook != nil {
			openedHook()
		}
		again, err := lockOpened(f, path, syscall.LOCK_EX)
		if err != nil {
			return nil, err
		}
		if again {
			continue
		}
		writeHolder(f, Self(time.Now()))
		return func() {
			_ = f.Truncate(0) // record nobody before letting go
			_ = flock(f, syscall.LOCK_UN)
			f.Close()
		}, nil
	}
}

// RLock waits, as Lock does, for a shared flock on the lock file at path,
// so that it enters only while no exclusive holder is inside; many shared
// holders enter together. It never creates the file: when there is none,
// no exclusive holder can be inside either, and RLock returns at once with
// an unlock that does nothing. Shared holders record nothing in the file.
// A wait ends with ctx (the error wraps ctx.Err()). Safe for concurrent
// use.
func RLock(ctx context.Context, path string) (unlock func(), err error) {
	return retry(ctx, path, tryRLock)
}

// retry calls try until it does not answer ErrLocked, waiting a jittered,
// doubling pause (lockFirstWait up to lockMaxWait) between calls; a wait
// ends with ctx.
func retry(ctx context.Context, path string, try func(string) (func(), error)) (func(), error) {
	wait := lockFirstWait
	for {
		unlock, err := try(path)
		if !errors.Is(err, ErrLocked) {
			return unlock, err
		}
		t := time.NewTimer(wait/2 + rand.N(wait))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("lock %s: %w", path, ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, lockMaxWait)
	}
}

func tryRLock(path string) (func(), error) {
	for {
		f, err := os.Open(path)
		if errors.Is(err, os.ErrNotExist) {
			return func() {}, nil
		}
		if err != nil {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		again, err := lockOpened(f, path, syscall.LOCK_SH)
		if err != nil {
			return nil, err
		}
		if again {
			continue
		}
		return func() {
			_ = flock(f, syscall.LOCK_UN)
			f.Close()
		}, nil
	}
}

// lockOpened takes the flock how (LOCK_EX or LOCK_SH) on the open f
// without waiting and checks that f is still the file at path. It closes f
// unless the lock is held: on an error (wrapping ErrLocked when another
// holds it), and when the file at path was removed or replaced meanwhile,
// which it reports as again (closing let the flock go; take the new file).
func lockOpened(f *os.File, path string, how int) (again bool, err error) {
	err = flock(f, how|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		f.Close()
		return false, fmt.Errorf("lock %s: %w", path, ErrLocked)
	}
	if err != nil {
		f.Close()
		return false, fmt.Errorf("lock %s: %w", path, err)
	}
	same, err := stillAt(f, path)
	if err != nil {
		f.Close()
		return false, fmt.Errorf("lock %s: %w", path, err)
	}
	if !same {
		f.Close()
		return true, nil
	}
	return false, nil
}

// openedHook, when set by a test, runs between opening the lock file and
// trying its flock: the window in which the file can be removed and
// recreated under a waiter.
var openedHook func()

// flock calls flock(2) on f, again when a signal interrupts it.
func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// stillAt reports whether path names the same file as the open f: the same
// device and inode, as os.SameFile compares them from the two stats. A
// missing path is false, not an error.
func stillAt(f *os.File, path string) (bool, error) {
	held, err := f.Stat()
	if err != nil {
		return false, err
	}
	now, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return os.SameFile(held, now), nil
}
