package store

import (
	"fmt"
	"time"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/safefile"
)

// Unlocking is what clearing a store's stale locks did (`host unlock-store`).
type Unlocking struct {
	// Store names the store, its credentials redacted (set by the caller).
	Store     string       `json:"store"`
	OlderThan string       `json:"older_than,omitempty"`
	Locks     []LockReport `json:"locks"`
	Removed   int          `json:"removed"`
	Kept      int          `json:"kept"`
	Note      string       `json:"note,omitempty"`
	// keys are the keys named; live, the live locks among theirs
	keys []string
	live []LockReport
}

// UnlockStale clears st's stale locks (FileStore.ClearStaleLocks) of the
// keys named, or all, and counts what it removed and kept. A store that
// keeps no lock files (only the file store does) is noted, not refused.
func UnlockStale(st Store, keys []string, olderThan time.Duration) (*Unlocking, error) {
	u := &Unlocking{Locks: []LockReport{}, keys: keys}
	if olderThan > 0 {
		u.OlderThan = olderThan.String()
	}
	fs, ok := st.(*FileStore)
	if !ok {
		u.Note = "this store keeps no lock files (only the file store does): nothing to clear"
	} else {
		var err error
		if u.Locks, err = fs.ClearStaleLocks(keys, olderThan); err != nil {
			return nil, fmt.Errorf("unlock store: %w", err)
		}
	}
	for _, l := range u.Locks {
		switch {
		case l.Removed:
			u.Removed++
		case l.State != safefile.LockFree:
			u.Kept++
		}
		if l.State == safefile.LockLive && len(keys) > 0 {
			u.live = append(u.live, l)
		}
	}
	return u, nil
}

// Held refuses (held) a live lock of a key that was named, naming its
// holder; nil when none is live or no key was named.
func (u *Unlocking) Held() error {
	if len(u.live) == 0 {
		return nil
	}
	l := u.live[0]
	return &refusal.Error{Code: refusal.Held, Details: u.live,
		Message: fmt.Sprintf("the lock of %s is live: %s", l.Key, l.Note),
		Hint:    "a running holder lets go by itself; stop that process if it hangs"}
}

// Lines are the text form: the note, each lock judged (a free one only
// when keys were named: it blocks nobody) and the counts.
func (u *Unlocking) Lines() []string {
	var out []string
	if u.Note != "" {
		out = append(out, u.Note)
	}
	for _, l := range u.Locks {
		if l.State == safefile.LockFree && len(u.keys) == 0 {
			continue // a free lock blocks nobody; --json lists it
		}
		name := l.Key
		if name == "" {
			name = l.File
		}
		out = append(out, name+": "+l.Note)
	}
	return append(out, fmt.Sprintf("removed %d stale lock(s), kept %d held one(s) in %s", u.Removed, u.Kept, u.Store))
}
