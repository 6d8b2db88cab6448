package beacon

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/safefile"
	"github.com/wisent/stado/store"
)

// notifySocket is a real unixgram socket in systemd's place: NOTIFY_SOCKET,
// WATCHDOG_USEC and WATCHDOG_PID name it, its interval (none when 0) and
// this process for the test, and the test reads the datagrams the runner sends, in order.
type notifySocket struct {
	t    *testing.T
	conn *net.UnixConn
}

func listenNotify(t *testing.T, watchdog time.Duration) *notifySocket {
	t.Helper()
	// a short directory: a socket path holds at most 107 bytes
	dir, err := os.MkdirTemp("", "sdnotify")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	if watchdog > 0 {
		t.Setenv("WATCHDOG_USEC", strconv.FormatInt(watchdog.Microseconds(), 10))
	} else {
		t.Setenv("WATCHDOG_USEC", "")
	}
	return &notifySocket{t: t, conn: conn}
}

// next returns the next datagram's assignments, or nil when none arrives
// within d.
func (s *notifySocket) next(d time.Duration) []string {
	s.t.Helper()
	buf := make([]byte, 4096)
	if err := s.conn.SetReadDeadline(time.Now().Add(d)); err != nil {
		s.t.Fatal(err)
	}
	n, _, err := s.conn.ReadFromUnix(buf)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil
	}
	if err != nil {
		s.t.Fatal(err)
	}
	return strings.Split(string(buf[:n]), "\n")
}

// until reads datagrams until one holds every assignment of want (STATUS=
// by prefix), failing after d; it returns the messages read before it.
func (s *notifySocket) until(d time.Duration, want ...string) (before [][]string, got []string) {
	s.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		msg := s.next(time.Until(deadline))
		if msg != nil && holds(msg, want...) {
			return before, msg
		}
		if msg != nil {
			before = append(before, msg)
		}
	}
	s.t.Fatalf("no notify message with %q within %s; read before: %q", want, d, before)
	return nil, nil
}

// drain reads what is already queued on the socket.
func (s *notifySocket) drain() [][]string {
	var out [][]string
	for msg := s.next(50 * time.Millisecond); msg != nil; msg = s.next(50 * time.Millisecond) {
		out = append(out, msg)
	}
	return out
}

// holds reports whether msg has every assignment of want; one ending in
// '=' (STATUS=) or a space matches by prefix.
func holds(msg []string, want ...string) bool {
	for _, w := range want {
		if !slices.ContainsFunc(msg, func(l string) bool {
			return l == w || (strings.HasSuffix(w, "=") || strings.HasSuffix(w, " ")) && strings.HasPrefix(l, w)
		}) {
			return false
		}
	}
	return true
}

// passSignal tells the test that a pass has reached its contributors.
type passSignal struct{ started chan int64 }

func (p passSignal) Contribute(_ context.Context, pass *Pass) { p.started <- pass.Number }

// logBuffer is a logger's output the test reads while Run writes.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startRun runs r until the test ends, returning the cancel that stops it
// and the channel Run's result arrives on.
func startRun(t *testing.T, r *Runner) (context.CancelFunc, chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return cancel, done
}

// Under systemd (a notify socket and a watchdog), the host process says
// READY=1 once its first beacon is in the store, pets the watchdog at the
// end of every pass and every half interval while it waits for the next,
// carries the last pass in STATUS=, says STOPPING=1 when it ends, and
// warns once that its pass interval is longer than the watchdog.
func TestRunSaysReadyAfterTheFirstPublishAndPetsAfterPassesAndWhileIdle(t *testing.T) {
	sock := listenNotify(t, 200*time.Millisecond)
	st := newStore(t)
	if _, err := registry.Push(context.Background(), st, fleet(), 0, "test"); err != nil {
		t.Fatal(err)
	}
	n, err := SystemdNotifier()
	if err != nil || n == nil || n.Watchdog != 200*time.Millisecond {
		t.Fatalf("SystemdNotifier = %+v, %v; want a notifier with a 200ms watchdog", n, err)
	}
	var logs logBuffer
	ticker := newFakeTicker()
	r := &Runner{Host: "host1", Store: st, Observer: staticObserver{}, Config: Config{Interval: time.Hour},
		NewTicker: ticker.new, Notifier: n, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	cancel, done := startRun(t, r)

	_, ready := sock.until(5*time.Second, "READY=1")
	if !holds(ready, "WATCHDOG=1", "STATUS=pass 1 ") || !strings.Contains(strings.Join(ready, "\n"), "beacon published") {
		t.Errorf("the first message %q, want READY=1 with WATCHDOG=1 and the published pass 1 in STATUS=", ready)
	}
	if b, err := readBeacon(st); err != nil || b.Pass != 1 {
		t.Fatalf("READY=1 came before pass 1 was in the store: %+v, %v", b, err)
	}
	// idle: the interval is an hour, the watchdog 200ms
	idle := 0
	for deadline := time.Now().Add(2 * time.Second); idle < 3 && time.Now().Before(deadline); {
		msg := sock.next(time.Second)
		if holds(msg, "WATCHDOG=1") && len(msg) == 1 {
			idle++
		}
	}
	if idle < 3 {
		t.Fatalf("%d WATCHDOG=1 while idle, want one every 100ms", idle)
	}
	ticker.ticks <- time.Now()
	if _, msg := sock.until(5*time.Second, "STATUS=pass 2 "); !holds(msg, "WATCHDOG=1") || holds(msg, "READY=1") {
		t.Errorf("after pass 2: %q, want WATCHDOG=1 and no second READY=1", msg)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	done <- nil // for the cleanup
	sock.until(5*time.Second, "STOPPING=1")
	if got := strings.Count(logs.String(), "longer than the systemd watchdog"); got != 1 {
		t.Errorf("the interval warning was logged %d times, want once:\n%s", got, logs.String())
	}
}

// A pass held inside the store (its beacon key's lock taken, as a wedged
// writer would hold it) sends nothing: no WATCHDOG=1 for many watchdog
// intervals, so systemd would kill the process. Released, the pass ends,
// is published, and the petting resumes.
func TestAPassHeldByTheStoreSendsNoWatchdogUntilItEnds(t *testing.T) {
	const watchdog = 100 * time.Millisecond
	sock := listenNotify(t, watchdog)
	st := newStore(t)
	if _, err := registry.Push(context.Background(), st, fleet(), 0, "test"); err != nil {
		t.Fatal(err)
	}
	n, err := SystemdNotifier()
	if err != nil || n == nil {
		t.Fatalf("SystemdNotifier = %v, %v", n, err)
	}
	var logs logBuffer
	ticker := newFakeTicker()
	passes := passSignal{started: make(chan int64, 4)}
	r := &Runner{Host: "host1", Store: st, Observer: staticObserver{}, Config: Config{Interval: watchdog / 4},
		Contributors: []Contributor{passes}, NewTicker: ticker.new, Notifier: n, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	startRun(t, r)
	sock.until(5*time.Second, "READY=1", "STATUS=pass 1 ")
	<-passes.started

	// hold the file store's lock on the beacon key from outside the store
	var lockPath string
	locks, err := st.(*store.FileStore).Locks()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range locks {
		if l.Key == store.BeaconPrefix+"host1" {
			lockPath = l.Path
		}
	}
	if lockPath == "" {
		t.Fatalf("no lock file of %shost1 among %+v", store.BeaconPrefix, locks)
	}
	unlock, err := safefile.Lock(context.Background(), lockPath)
	if err != nil {
		t.Fatal(err)
	}
	released := false
	defer func() {
		if !released {
			unlock()
		}
	}()
	ticker.ticks <- time.Now()
	if got := <-passes.started; got != 2 {
		t.Fatalf("pass %d started, want 2", got)
	}
	sock.drain() // what the loop sent before the pass began
	if msg := sock.next(10 * watchdog); msg != nil {
		t.Fatalf("while pass 2 is held the process sent %q, want nothing for %s", msg, 10*watchdog)
	}
	// List reads without the key's lock, which the test holds
	if objs, err := st.List(context.Background(), store.BeaconPrefix); err != nil || len(objs) != 1 || !strings.Contains(string(objs[0].Value), `"pass":1,`) {
		t.Fatalf("while pass 2 is held the store lists %d beacons (%v), want pass 1's", len(objs), err)
	}
	unlock()
	released = true
	sock.until(5*time.Second, "WATCHDOG=1", "STATUS=pass 2 ")
	if b, err := readBeacon(st); err != nil || b.Pass != 2 {
		t.Fatalf("after the release the store holds %+v, %v; want pass 2", b, err)
	}
	if msg := sock.next(2 * watchdog); !holds(msg, "WATCHDOG=1") {
		t.Errorf("idle after pass 2: %q, want WATCHDOG=1 again", msg)
	}
	if strings.Contains(logs.String(), "longer than the systemd watchdog") {
		t.Errorf("an interval shorter than the watchdog was warned about:\n%s", logs.String())
	}
}

// A first pass whose beacon cannot be written still ends: the process is
// ready (its refusal is kept for the next beacon) and STATUS= says the
// beacon was not published, with the store's error.
func TestAFirstPassThatCouldNotPublishStillSaysReady(t *testing.T) {
	sock := listenNotify(t, 0)
	st := &failingPuts{Store: newStore(t), fail: true}
	n, err := SystemdNotifier()
	if err != nil || n == nil || n.Watchdog != 0 {
		t.Fatalf("SystemdNotifier = %+v, %v; want a notifier without a watchdog", n, err)
	}
	r := &Runner{Host: "host1", Store: st, Observer: staticObserver{}, NewTicker: newFakeTicker().new, Notifier: n}
	startRun(t, r)
	_, msg := sock.until(5*time.Second, "READY=1")
	status := strings.Join(msg, "\n")
	if holds(msg, "WATCHDOG=1") || !strings.Contains(status, "STATUS=pass 1 ") || !strings.Contains(status, "not published") || !strings.Contains(status, "disk full") {
		t.Errorf("first message %q, want READY=1 and the unpublished pass 1 with its error in STATUS=, no WATCHDOG=1 without a watchdog", msg)
	}
}

// Outside systemd (no NOTIFY_SOCKET) there is no notifier, and a nil one
// sends nothing.
func TestWithoutANotifySocketThereIsNoNotifier(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	t.Setenv("WATCHDOG_USEC", "1000000")
	if n, err := SystemdNotifier(); n != nil || err != nil {
		t.Fatalf("SystemdNotifier = %+v, %v; want nil, nil", n, err)
	}
	var n *Notifier
	n.idle(slog.New(slog.DiscardHandler))
	n.passEnded(slog.New(slog.DiscardHandler), &Beacon{Pass: 1}, nil)
	n.stopping(slog.New(slog.DiscardHandler))
}

// STATUS= is one line of bounded length whatever the store's error says.
func TestPassStatusIsOneBoundedLine(t *testing.T) {
	b := &Beacon{Pass: 7, At: t0}
	s := passStatus(b, errors.New("publish: "+strings.Repeat("ż", 300)+"\nsecond line"))
	if strings.ContainsAny(s, "\n\r") || len(s) > maxStatus+len("…") || !strings.HasPrefix(s, "pass 7 at 10:00:00: beacon not published") {
		t.Fatalf("status %q (%d bytes)", s, len(s))
	}
	if got := passStatus(b, nil); got != "pass 7 at 10:00:00: beacon published, 0 units, 0 refusals" {
		t.Fatalf("status %q", got)
	}
}
