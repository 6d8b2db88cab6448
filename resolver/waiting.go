package resolver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/safefile"
)

// Phases of a wait.
const (
	// PhaseOpen: the channel to the service is still being opened.
	PhaseOpen = "open"
	// PhaseAnswer: the request is sent; the first byte is awaited.
	PhaseAnswer = "answer"
)

// ListKind and ListVersion identify a waiting list file.
const (
	ListKind    = "stado.resolver.waiting"
	ListVersion = 1
)

// ListPath is the waiting list of a home directory:
// <home>/.stado/resolver-waiting.json.
func ListPath(home string) string {
	return filepath.Join(home, ".stado", "resolver-waiting.json")
}

// Wait is one request a resolver forwards and has not seen answered.
type Wait struct {
	// ID tells apart the waits of one publisher; it is never reused by it.
	ID       uint64 `json:"id"`
	Service  string `json:"service"`
	Host     string `json:"host"`
	Endpoint string `json:"endpoint"`
	// Client is the remote address of the caller, or its declared name.
	Client string `json:"client"`
	// RequestLine is "GET /path HTTP/1.1"; in TCP mode the first line the
	// client sent when it is text, else a note of how many bytes it sent.
	RequestLine string    `json:"request_line"`
	AcceptedAt  time.Time `json:"accepted_at"`
	Phase       string    `json:"phase"`
	// SentAt is when the request was sent (the phase became answer).
	SentAt *time.Time `json:"sent_at,omitempty"`
}

// Publication is one resolver process's section of the waiting list.
type Publication struct {
	PID int `json:"pid"`
	// Started is the process's start time as the kernel counts it (linux
	// /proc/<pid>/stat field 22), so a reused pid is not taken for it.
	Started        string    `json:"started,omitempty"`
	RefreshSeconds int       `json:"refresh_seconds"`
	PublishedAt    time.Time `json:"published_at"`
	Waits          []Wait    `json:"waits"`
}

// WaitingList is the file every resolver process on a host publishes to:
// one section per running publisher.
type WaitingList struct {
	Kind       string        `json:"kind"`
	Version    int           `json:"version"`
	Publishers []Publication `json:"publishers"`
}

// Live returns the sections whose publisher still runs, as running says
// (Running in production).
func (l *WaitingList) Live(running func(Publication) bool) []Publication {
	var out []Publication
	for _, p := range l.Publishers {
		if running(p) {
			out = append(out, p)
		}
	}
	return out
}

// UnreadableError says a waiting list exists but cannot be read as one.
type UnreadableError struct {
	File  string
	Cause string
}

func (e *UnreadableError) Error() string {
	return fmt.Sprintf("waiting list %s is unreadable: %s", e.File, e.Cause)
}
func (e *UnreadableError) RefusalCode() refusal.Code { return refusal.Unreadable }

// ReadList reads a waiting list. A missing file is an empty list; any
// other failure, or content that is not a waiting list, is an
// *UnreadableError naming the file.
func ReadList(path string) (*WaitingList, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &WaitingList{Kind: ListKind, Version: ListVersion}, nil
	}
	if err != nil {
		return nil, &UnreadableError{File: path, Cause: err.Error()}
	}
	var l WaitingList
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, &UnreadableError{File: path, Cause: err.Error()}
	}
	if l.Kind != ListKind || l.Version != ListVersion {
		return nil, &UnreadableError{File: path, Cause: fmt.Sprintf("kind %q version %d, want %s version %d", l.Kind, l.Version, ListKind, ListVersion)}
	}
	for i, p := range l.Publishers {
		if p.PID <= 0 {
			return nil, &UnreadableError{File: path, Cause: fmt.Sprintf("publishers[%d].pid is %d", i, p.PID)}
		}
		for j, w := range p.Waits {
			at := fmt.Sprintf("publishers[%d].waits[%d]", i, j)
			switch {
			case w.Phase != PhaseOpen && w.Phase != PhaseAnswer:
				return nil, &UnreadableError{File: path, Cause: fmt.Sprintf("%s.phase is %q, want open or answer", at, w.Phase)}
			case w.Service == "" || w.Host == "":
				return nil, &UnreadableError{File: path, Cause: at + " names no service or host"}
			case w.AcceptedAt.IsZero():
				return nil, &UnreadableError{File: path, Cause: at + ".accepted_at is missing"}
			}
		}
	}
	return &l, nil
}

// Running reports whether the publisher of p still runs: its pid exists
// and, when the section records a start time, the process has that one.
func Running(p Publication) bool {
	if p.PID <= 0 {
		return false
	}
	err := syscall.Kill(p.PID, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	if p.Started != "" {
		if now := processStarted(p.PID); now != "" && now != p.Started {
			return false
		}
	}
	return true
}

// processStarted is field 22 of /proc/<pid>/stat, "" where there is none.
func processStarted(pid int) string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19] // fields 3.. start at index 0; field 22 is index 19
}

// Recorder holds the waits of one resolver process. Safe for concurrent
// use.
type Recorder struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	mu    sync.Mutex
	seq   uint64
	waits map[uint64]*Wait
}

func (r *Recorder) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Pending is a recorded wait in progress.
type Pending struct {
	r  *Recorder
	id uint64
}

// Begin records a new wait in phase open, accepted now; its ID,
// AcceptedAt and Phase are set by the recorder.
func (r *Recorder) Begin(w Wait) *Pending {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.waits == nil {
		r.waits = map[uint64]*Wait{}
	}
	r.seq++
	w.ID = r.seq
	w.AcceptedAt = r.now().UTC()
	w.Phase = PhaseOpen
	w.SentAt = nil
	r.waits[w.ID] = &w
	return &Pending{r: r, id: w.ID}
}

// ID is the wait's id.
func (p *Pending) ID() uint64 { return p.id }

// Sent moves the wait to phase answer: the request is on its way and the
// first byte is awaited. A finished wait is left alone.
func (p *Pending) Sent() {
	p.r.mu.Lock()
	defer p.r.mu.Unlock()
	if w, ok := p.r.waits[p.id]; ok && w.Phase == PhaseOpen {
		at := p.r.now().UTC()
		w.Phase = PhaseAnswer
		w.SentAt = &at
	}
}

// Done ends the wait: the first byte came or the request failed. Calling
// it again does nothing.
func (p *Pending) Done() {
	p.r.mu.Lock()
	defer p.r.mu.Unlock()
	delete(p.r.waits, p.id)
}

// setRequestLine replaces the request line of a wait still recorded.
func (r *Recorder) setRequestLine(p *Pending, line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w, ok := r.waits[p.id]; ok {
		w.RequestLine = line
	}
}

// Snapshot returns the current waits, oldest first.
func (r *Recorder) Snapshot() []Wait {
	r.mu.Lock()
	out := make([]Wait, 0, len(r.waits))
	for _, w := range r.waits {
		c := *w
		if w.SentAt != nil {
			at := *w.SentAt
			c.SentAt = &at
		}
		out = append(out, c)
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].AcceptedAt.Equal(out[j].AcceptedAt) {
			return out[i].AcceptedAt.Before(out[j].AcceptedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// Held reports whether service holds a request on any host: a wait in
// phase answer accepted more than bound ago. It returns the oldest such
// wait and how many there are. A bound of zero or less holds nothing.
func (r *Recorder) Held(service string, bound time.Duration) (Wait, int, bool) {
	return r.HeldOn(service, "", bound)
}

// HeldOn is Held for the copy of service on host ("" means every host): a
// service on several hosts is held only where its waits are, so a resolver
// that chose another host's copy is not refused because of it.
func (r *Recorder) HeldOn(service, host string, bound time.Duration) (Wait, int, bool) {
	if bound <= 0 {
		return Wait{}, 0, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	var oldest *Wait
	n := 0
	for _, w := range r.waits {
		if w.Service != service || (host != "" && w.Host != host) || w.Phase != PhaseAnswer || now.Sub(w.AcceptedAt) <= bound {
			continue
		}
		n++
		if oldest == nil || w.AcceptedAt.Before(oldest.AcceptedAt) || (w.AcceptedAt.Equal(oldest.AcceptedAt) && w.ID < oldest.ID) {
			oldest = w
		}
	}
	if oldest == nil {
		return Wait{}, 0, false
	}
	return *oldest, n, true
}

// DefaultPublishInterval is how often a Publisher rewrites the list.
const DefaultPublishInterval = 500 * time.Millisecond

// Publisher publishes one process's waits to the host's waiting list.
//
// Several resolver processes on one host share the one file: each holds
// an exclusive flock on the sidecar <file>.lock while it reads the list,
// replaces its own section (by pid), drops the sections of publishers that
// no longer run, and writes the whole list atomically. Readers never lock:
// the rename makes every read see one whole list.
type Publisher struct {
	Path     string
	Recorder *Recorder
	// RefreshSeconds reports the interval the resolver applies; nil is 0.
	RefreshSeconds func() int
	// PID is the publishing process; 0 means this one.
	PID int
	// Interval between publishes; 0 means DefaultPublishInterval. It is
	// never more than a second.
	Interval time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// NewTicker makes the ticker Run waits on; nil uses time.NewTicker.
	NewTicker func(time.Duration) (<-chan time.Time, func())

	published func() // test hook: called after each publish of Run
}

func (p *Publisher) interval() time.Duration {
	if p.Interval <= 0 || p.Interval > time.Second {
		return DefaultPublishInterval
	}
	return p.Interval
}

func (p *Publisher) pid() int {
	if p.PID > 0 {
		return p.PID
	}
	return os.Getpid()
}

// Run publishes at once and then every interval until ctx ends, then
// withdraws this process's section. A failed publish is retried on the
// next tick; Run returns the withdrawal's error.
func (p *Publisher) Run(ctx context.Context) error {
	newTicker := p.NewTicker
	if newTicker == nil {
		newTicker = func(d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTicker(d)
			return t.C, t.Stop
		}
	}
	ticks, stop := newTicker(p.interval())
	defer stop()
	for {
		_ = p.Publish()
		if p.published != nil {
			p.published()
		}
		select {
		case <-ctx.Done():
			return p.Withdraw()
		case <-ticks:
		}
	}
}

// Publish writes this process's current waits into the list.
func (p *Publisher) Publish() error { return p.update(true) }

// Withdraw removes this process's section from the list.
func (p *Publisher) Withdraw() error { return p.update(false) }

func (p *Publisher) update(include bool) error {
	if err := os.MkdirAll(filepath.Dir(p.Path), 0o700); err != nil {
		return fmt.Errorf("publish waiting list: %w", err)
	}
	unlock, err := safefile.Lock(context.Background(), p.Path+".lock")
	if err != nil {
		return fmt.Errorf("publish waiting list: %w", err)
	}
	defer unlock()

	pid := p.pid()
	list := &WaitingList{Kind: ListKind, Version: ListVersion, Publishers: []Publication{}}
	// A list that cannot be read is replaced: it names nothing anyway.
	if cur, err := ReadList(p.Path); err == nil {
		for _, s := range cur.Publishers {
			if s.PID != pid && Running(s) {
				list.Publishers = append(list.Publishers, s)
			}
		}
	}
	if include {
		refresh := 0
		if p.RefreshSeconds != nil {
			refresh = p.RefreshSeconds()
		}
		now := time.Now
		if p.Now != nil {
			now = p.Now
		}
		list.Publishers = append(list.Publishers, Publication{
			PID: pid, Started: processStarted(pid), RefreshSeconds: refresh,
			PublishedAt: now().UTC(), Waits: p.Recorder.Snapshot(),
		})
	}
	sort.Slice(list.Publishers, func(i, j int) bool { return list.Publishers[i].PID < list.Publishers[j].PID })
	data, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return fmt.Errorf("encode waiting list: %w", err)
	}
	return safefile.Write(p.Path, append(data, '\n'), 0o600)
}
