package desktop

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/wisent/stado/store"
)

// Watcher is a store that says when its keys under prefix change. A store
// that implements it is watched (an etcd watch); any other is checked every
// Config.WatchEvery: a file store by its directory's modification time (a
// replaced file changes it), others by the revisions of the registry and
// the beacons.
type Watcher interface {
	Watch(ctx context.Context, prefix string) (<-chan struct{}, error)
}

// changeFeed counts the store's changes; waiters block until the count
// passes what they saw.
type changeFeed struct {
	st    store.Store
	every time.Duration

	mu   sync.Mutex
	gen  uint64
	wake chan struct{} // closed and replaced at every change
}

func newChangeFeed(st store.Store, every time.Duration) *changeFeed {
	return &changeFeed{st: st, every: every, wake: make(chan struct{})}
}

func (f *changeFeed) bump() {
	f.mu.Lock()
	f.gen++
	close(f.wake)
	f.wake = make(chan struct{})
	f.mu.Unlock()
}

// current returns the count and a channel closed at the next change.
func (f *changeFeed) current() (uint64, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gen, f.wake
}

// run watches until ctx ends.
func (f *changeFeed) run(ctx context.Context) {
	if w, ok := f.st.(Watcher); ok {
		if ch, err := w.Watch(ctx, ""); err == nil {
			for {
				select {
				case <-ctx.Done():
					return
				case _, open := <-ch:
					if !open {
						return
					}
					f.bump()
				}
			}
		}
	}
	var last string
	tick := time.NewTicker(f.every)
	defer tick.Stop()
	for {
		if fp := f.fingerprint(ctx); fp != "" && fp != last {
			if last != "" {
				f.bump()
			}
			last = fp
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// fingerprint is what changes when the store does; "" when it cannot be
// read now.
func (f *changeFeed) fingerprint(ctx context.Context) string {
	if fs, ok := f.st.(*store.FileStore); ok {
		fi, err := os.Stat(fs.Dir())
		if err != nil {
			return ""
		}
		return fi.ModTime().String() + "/" + strconv.FormatInt(fi.Size(), 10)
	}
	fp := ""
	if o, err := f.st.Get(ctx, store.RegistryKey); err == nil {
		fp = strconv.FormatInt(o.Revision, 10)
	}
	objs, err := f.st.List(ctx, store.BeaconPrefix)
	if err != nil {
		return ""
	}
	for _, o := range objs {
		fp += "," + o.Key + "@" + strconv.FormatInt(o.Revision, 10)
	}
	return fp
}

// handleChanges answers when the store changed since the count the page
// saw (?gen=N), or after 25 s with the same count.
func (s *Server) handleChanges(w http.ResponseWriter, r *http.Request) {
	seen, _ := strconv.ParseUint(r.URL.Query().Get("gen"), 10, 64)
	gen, wake := s.feed.current()
	if gen == seen {
		t := time.NewTimer(25 * time.Second)
		defer t.Stop()
		select {
		case <-wake:
		case <-t.C:
		case <-r.Context().Done():
			return
		}
		gen, _ = s.feed.current()
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]uint64{"gen": gen})
}
