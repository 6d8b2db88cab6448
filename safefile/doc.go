// Package safefile owns the two file primitives every stado package needs:
// replacing a file atomically (Write) and holding an exclusive lock on a
// sidecar lock file (Lock, TryLock).
//
// It imports only the standard library and no stado package, so that
// writing or locking a file never means importing the registry or anything
// above it. Everything here is for Unix hosts (Linux and macOS): the lock is
// flock(2).
package safefile
