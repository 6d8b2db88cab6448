// Package safefile owns the file primitives every stado package needs:
// replacing a file atomically (Write), holding an exclusive lock on a
// sidecar lock file (Lock, TryLock) or a shared one (RLock), and judging
// and clearing a lock whose holder is gone (InspectLock, ClearStale).
//
// An exclusive lock file records its holder (pid, process start, host and
// when it took the lock) while the lock is held, so that a lock left held
// by a process that outlived its holder can be told from a live one. See
// docs/store.md, "Stale locks".
//
// It imports only the standard library (and golang.org/x/sys on macOS, for
// process start times) and no stado package, so that writing or locking a
// file never means importing the registry or anything above it. Everything
// here is for Unix hosts (Linux and macOS): the lock is flock(2).
package safefile
