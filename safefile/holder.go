package safefile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Holder is what an exclusive lock file records about the process that
// holds it: written by Lock and TryLock once they hold the flock, cleared
// by the unlock before the flock is let go. A lock file whose flock is
// free therefore records nobody (or, after a crash, a holder that is
// gone); one whose flock is held names who took it.
//
// Start is the identity of the process's start on this host (Linux: the
// start time in clock ticks since boot from /proc/PID/stat, with the boot's
// id; macOS: the kernel's start timeval), compared exactly, so a pid the
// kernel gave to a newer process is not taken for the holder. Started is
// the same moment as a wall-clock time, for people.
//
// PIDNS is the pid namespace the pid is counted in (Linux: the link text of
// /proc/self/ns/pid, "pid:[4026531836]"; empty where there is none). Two
// processes that share the store's directory may live in different pid
// namespaces (a container, a testbed host), where pid 1 of one is not pid 1
// of the other: a holder recorded in another namespace is never judged.
type Holder struct {
	PID     int       `json:"pid"`
	Start   string    `json:"start"`
	Started time.Time `json:"started,omitzero"`
	Host    string    `json:"host"`
	PIDNS   string    `json:"pidns,omitempty"`
	Since   time.Time `json:"since"` // when the holder took the lock
}

// String names the holder as messages do: "pid 42 (started ...) on host1".
func (h Holder) String() string {
	s := fmt.Sprintf("pid %d", h.PID)
	if !h.Started.IsZero() {
		s += " (started " + h.Started.UTC().Format(time.RFC3339) + ")"
	} else if h.Start != "" {
		s += " (start " + h.Start + ")"
	}
	if h.Host != "" {
		s += " on " + h.Host
	}
	if h.PIDNS != "" && h.PIDNS != selfHolder().PIDNS {
		s += " in pid namespace " + h.PIDNS
	}
	return s
}

// same reports whether h and o record the same holder taking the lock.
func (h Holder) same(o Holder) bool {
	return h.PID == o.PID && h.Start == o.Start && h.Host == o.Host && h.PIDNS == o.PIDNS && h.Since.Equal(o.Since)
}

// Liveness is what this host can say about a recorded holder.
type Liveness int

const (
	// HolderRunning: the pid runs and started when the record says.
	HolderRunning Liveness = iota
	// HolderGone: no process has the pid, or the one that has it started
	// at another time (the pid was reused).
	HolderGone
	// HolderElsewhere: the record names another host, whose processes this
	// host cannot see.
	HolderElsewhere
	// HolderUnknown: this host cannot read process start times, so only a
	// missing pid could prove the holder gone.
	HolderUnknown
	// HolderOtherNamespace: the record counts its pid in another pid
	// namespace than this process's (or, written by an older stado, names
	// none): the pid here may be any process, or none, so nothing is judged.
	HolderOtherNamespace
)

// Judge says whether h still runs, as seen from this host (hostname). A
// holder on another host is HolderElsewhere, never gone.
func (h Holder) Judge() Liveness {
	if self := selfHolder(); h.Host != "" && self.Host != "" && h.Host != self.Host {
		return HolderElsewhere
	}
	if self := selfHolder(); self.PIDNS != h.PIDNS {
		return HolderOtherNamespace
	}
	start, _, err := processStart(h.PID)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return HolderGone
	case err != nil || start == "" || h.Start == "":
		return HolderUnknown
	case start != h.Start:
		return HolderGone
	}
	return HolderRunning
}

var (
	selfOnce sync.Once
	self     Holder
)

// selfHolder is this process as a lock records it (without Since).
func selfHolder() Holder {
	selfOnce.Do(func() {
		self.PID = os.Getpid()
		self.Start, self.Started, _ = processStart(self.PID)
		self.Host, _ = os.Hostname()
		self.PIDNS = pidNamespace()
	})
	return self
}

// Self is this process as a lock file records it, with Since set to now.
func Self(now time.Time) Holder {
	h := selfHolder()
	h.Since = now.UTC()
	return h
}

// maxRecord bounds how much of a lock file is read as its record.
const maxRecord = 4096

// writeHolder records h in the held lock file f (replacing what it held).
// A failure is not fatal to the lock: the lock still serialises, only a
// later unlock-store cannot judge it.
func writeHolder(f *os.File, h Holder) {
	b, err := json.Marshal(h)
	if err != nil {
		return
	}
	b = append(b, '\n')
	if f.Truncate(0) == nil {
		_, _ = f.WriteAt(b, 0)
	}
}

// ReadHolder reads the holder recorded in the lock file at path. It returns
// nil and no error when the file records nobody (empty), and an error
// wrapping fs.ErrNotExist when there is no such file. A record that is not
// a holder is an error naming the file.
func ReadHolder(path string) (*Holder, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, maxRecord)
	n, err := f.ReadAt(b, 0)
	if n == 0 && err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read lock %s: %w", path, err)
	}
	b = b[:n]
	if len(trimSpace(b)) == 0 {
		return nil, nil
	}
	var h Holder
	if err := json.Unmarshal(trimSpace(b), &h); err != nil || h.PID <= 0 {
		return nil, fmt.Errorf("lock %s records no holder stado can read: %q", path, clip(b))
	}
	return &h, nil
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ' || b[len(b)-1] == 0) {
		b = b[:len(b)-1]
	}
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\n') {
		b = b[1:]
	}
	return b
}

func clip(b []byte) []byte {
	if len(b) > 80 {
		return b[:80]
	}
	return b
}
