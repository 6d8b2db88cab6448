package safefile

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// LockState is what InspectLock finds at a lock file.
type LockState string

const (
	// LockFree: nobody holds the flock; the file blocks no one.
	LockFree LockState = "free"
	// LockLive: the flock is held and its recorded holder runs.
	LockLive LockState = "live"
	// LockStale: the flock is held but its recorded holder is gone (a
	// process that inherited the open file outlived it, or the pid now
	// belongs to a newer process). It blocks every waiter and nobody will
	// ever let it go.
	LockStale LockState = "stale"
	// LockUnrecorded: the flock is held and the file names nobody: shared
	// holders (readers), a holder between taking the flock and writing its
	// record, or a program that does not record itself.
	LockUnrecorded LockState = "unrecorded"
	// LockElsewhere: the recorded holder is on another host.
	LockElsewhere LockState = "elsewhere"
	// LockUnjudged: this host cannot read the holder's start time, or the
	// record cannot be read.
	LockUnjudged LockState = "unjudged"
)

// LockReport is one lock file as InspectLock or ClearStale saw it.
type LockReport struct {
	File   string    `json:"file"`
	State  LockState `json:"state"`
	Holder *Holder   `json:"holder,omitempty"`
	// HeldSeconds is how long ago the holder took the lock, by its record.
	HeldSeconds float64 `json:"held_seconds,omitempty"`
	Removed     bool    `json:"removed"`
	// Note says, in words, what was found and what was done.
	Note string `json:"note"`
}

// InspectLock reports the state of the lock file at path without taking
// its lock or changing it: whether its flock is held, and whether the
// holder its record names still runs on this host. now dates HeldSeconds.
// A missing file is an error wrapping os.ErrNotExist.
func InspectLock(path string, now time.Time) (LockReport, error) {
	r := LockReport{File: path}
	h, recErr := ReadHolder(path)
	if recErr != nil && errors.Is(recErr, os.ErrNotExist) {
		return r, recErr
	}
	held, err := flockHeld(path)
	if err != nil {
		return r, err
	}
	r.Holder = h
	if h != nil && !h.Since.IsZero() {
		r.HeldSeconds = now.Sub(h.Since).Seconds()
	}
	switch {
	case !held:
		r.State, r.Note = LockFree, "free: nobody holds it"
		if h != nil && h.Judge() == HolderGone {
			r.Note = "free: left behind by " + h.String() + ", which is gone"
		}
	case recErr != nil:
		r.State, r.Note = LockUnjudged, "held, and "+recErr.Error()
	case h == nil:
		r.State, r.Note = LockUnrecorded, "held by a holder that records nobody (readers, or a holder still writing its record)"
	default:
		switch h.Judge() {
		case HolderRunning:
			r.State, r.Note = LockLive, "held by "+h.String()+", which runs"
		case HolderGone:
			r.State, r.Note = LockStale, "held, but its holder "+h.String()+" is gone"
		case HolderElsewhere:
			r.State, r.Note = LockElsewhere, "held by "+h.String()+", another host, which this host cannot judge"
		case HolderOtherNamespace:
			if h.PIDNS == "" {
				r.State, r.Note = LockUnjudged, "held by "+h.String()+", whose record names no pid namespace (an older stado wrote it), so its pid cannot be judged here"
			} else {
				r.State, r.Note = LockUnjudged, "held by "+h.String()+", another pid namespace than this one ("+selfHolder().PIDNS+"), which this process cannot judge"
			}
		default:
			r.State, r.Note = LockUnjudged, "held by "+h.String()+", whose start time this host cannot read"
		}
	}
	return r, nil
}

// ClearStale removes the lock file at path when it is stale (LockStale)
// and its holder took it at least olderThan before now (0: any age); any
// other state is reported and left alone. The flock of a stale file is
// held by a process that is not the holder, so ClearStale cannot take it
// first: it removes the file from under it. That is safe because a lock
// taker checks, once it holds the flock, that the file is still the one at
// the path (see Lock): waiters queued on the removed file move to a new
// one, and the process holding the old one is by definition not inside the
// data. Just before removing, ClearStale reads the record again and checks
// the file is the same one it judged, so a holder that let go and a new
// one that came in between keep their lock; the window left is that last
// check and the unlink.
func ClearStale(path string, olderThan time.Duration, now time.Time) (LockReport, error) {
	r, err := InspectLock(path, now)
	if err != nil || r.State != LockStale {
		return r, err
	}
	if olderThan > 0 && r.HeldSeconds < olderThan.Seconds() {
		r.Note += fmt.Sprintf("; kept: taken %s ago, younger than --older-than %s",
			time.Duration(r.HeldSeconds*float64(time.Second)).Round(time.Second), olderThan)
		return r, nil
	}
	before, err := os.Stat(path)
	if err != nil {
		return r, fmt.Errorf("clear lock %s: %w", path, err)
	}
	again, err := ReadHolder(path)
	if err != nil || again == nil || !again.same(*r.Holder) {
		r.State, r.Note = LockUnjudged, "its record changed while it was judged; kept"
		return r, nil
	}
	if now, err := os.Stat(path); err != nil || !os.SameFile(before, now) {
		r.State, r.Note = LockUnjudged, "the file was replaced while it was judged; kept"
		return r, nil
	}
	if err := os.Remove(path); err != nil {
		return r, fmt.Errorf("clear lock %s: %w", path, err)
	}
	r.Removed = true
	r.Note += "; removed"
	return r, nil
}

// flockHeld reports whether someone holds a flock on the file at path,
// by trying an exclusive one without waiting and letting it go at once.
// It writes nothing to the file.
func flockHeld(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("inspect lock %s: %w", path, err)
	}
	defer f.Close()
	err = flock(f, syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("inspect lock %s: %w", path, err)
	}
	_ = flock(f, syscall.LOCK_UN)
	return false, nil
}
