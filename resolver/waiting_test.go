package resolver

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time      { return c.t }
func (c *clock) add(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock               { return &clock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)} }
func waitOf(service string) Wait {
	return Wait{Service: service, Host: "host2", Endpoint: "127.0.1.2:8080", Client: "c", RequestLine: "GET / HTTP/1.1"}
}
func phases(ws []Wait) (out []string) {
	for _, w := range ws {
		out = append(out, w.Service+":"+w.Phase)
	}
	return out
}

func TestAWaitGoesFromOpenToAnswerToGone(t *testing.T) {
	c := newClock()
	r := &Recorder{Now: c.now}
	p := r.Begin(waitOf("brama"))
	if got := phases(r.Snapshot()); strings.Join(got, ",") != "brama:open" {
		t.Fatalf("after Begin: %v", got)
	}
	c.add(time.Second)
	p.Sent()
	snap := r.Snapshot()
	if len(snap) != 1 || snap[0].Phase != PhaseAnswer || snap[0].SentAt == nil || !snap[0].SentAt.Equal(c.t) {
		t.Fatalf("after Sent: %+v", snap)
	}
	if !snap[0].AcceptedAt.Equal(c.t.Add(-time.Second)) {
		t.Fatalf("accepted_at = %v", snap[0].AcceptedAt)
	}
	p.Done()
	p.Done() // idempotent
	if got := r.Snapshot(); len(got) != 0 {
		t.Fatalf("after Done: %v", got)
	}
}

func TestHeldIsTheOldestAnswerWaitPastTheBound(t *testing.T) {
	c := newClock()
	r := &Recorder{Now: c.now}
	bound := 5 * time.Second
	opening := r.Begin(waitOf("brama")) // stays open: the channel is not up
	c.add(time.Second)
	first := r.Begin(waitOf("brama"))
	first.Sent()
	c.add(time.Second)
	second := r.Begin(waitOf("brama"))
	second.Sent()
	other := r.Begin(waitOf("skarbiec"))
	other.Sent()
	_ = opening
	// Younger than the bound: not held.
	if _, _, ok := r.Held("brama", bound); ok {
		t.Fatal("held before the bound")
	}
	c.add(4 * time.Second) // first waited 5 s: not past the bound yet
	if _, _, ok := r.Held("brama", bound); ok {
		t.Fatal("held at exactly the bound")
	}
	c.add(time.Millisecond)
	w, n, ok := r.Held("brama", bound)
	if !ok || n != 1 || w.ID != first.ID() {
		t.Fatalf("held = %+v %d %v, want the first answer wait alone", w, n, ok)
	}
	c.add(time.Second)
	if _, n, _ := r.Held("brama", bound); n != 2 {
		t.Fatalf("held count = %d, want 2 (the open wait never counts)", n)
	}
	// The service answers the held requests: it is no longer held.
	first.Done()
	second.Done()
	if _, _, ok := r.Held("brama", bound); ok {
		t.Fatal("still held after the answers")
	}
	// A bound of zero (none declared) never holds.
	if _, _, ok := r.Held("skarbiec", 0); ok {
		t.Fatal("held with no bound")
	}
}

func TestPublisherWritesItsPidIntervalAndWaits(t *testing.T) {
	home := t.TempDir()
	c := newClock()
	r := &Recorder{Now: c.now}
	r.Begin(waitOf("brama")).Sent()
	path := ListPath(home)
	p := &Publisher{Path: path, Recorder: r, RefreshSeconds: func() int { return 5 }, Now: c.now}
	if err := p.Publish(); err != nil {
		t.Fatal(err)
	}
	l, err := ReadList(path)
	if err != nil {
		t.Fatal(err)
	}
	if l.Kind != ListKind || len(l.Publishers) != 1 {
		t.Fatalf("list = %+v", l)
	}
	pub := l.Publishers[0]
	if pub.PID != os.Getpid() || pub.RefreshSeconds != 5 || !pub.PublishedAt.Equal(c.t) || len(pub.Waits) != 1 || pub.Waits[0].Phase != PhaseAnswer {
		t.Fatalf("publication = %+v", pub)
	}
	if !Running(pub) {
		t.Fatal("this process is not seen running")
	}
	if strings.HasSuffix(path, ".stado/resolver-waiting.json") == false {
		t.Fatalf("path %s", path)
	}
	if _, err := os.Stat(path + ".lock"); err != nil {
		t.Fatalf("no sidecar lock: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Fatalf("temporary file left: %s", e.Name())
		}
	}
}

func TestPublisherPublishesAtLeastOncePerSecond(t *testing.T) {
	if d := (&Publisher{}).interval(); d > time.Second {
		t.Fatalf("default interval %v exceeds a second", d)
	}
	home := t.TempDir()
	c := newClock()
	r := &Recorder{Now: c.now}
	ticks := make(chan time.Time)
	published := make(chan struct{}, 10)
	p := &Publisher{Path: ListPath(home), Recorder: r, RefreshSeconds: func() int { return 5 }, Now: c.now,
		NewTicker: func(d time.Duration) (<-chan time.Time, func()) {
			if d > time.Second {
				t.Errorf("ticker of %v", d)
			}
			return ticks, func() {}
		},
		published: func() { published <- struct{}{} },
	}
	ctx, cancel := contextWithCancel(t)
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()
	<-published // the first publish happens at once
	for i := 0; i < 3; i++ {
		c.add(time.Second)
		r.Begin(waitOf("brama"))
		ticks <- c.t
		<-published
		l, err := ReadList(p.Path)
		if err != nil {
			t.Fatal(err)
		}
		if got := l.Publishers[0]; got.PID != os.Getpid() || len(got.Waits) != i+1 {
			t.Fatalf("tick %d: %+v", i, got)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Stopping withdraws this process's waits.
	l, err := ReadList(p.Path)
	if err != nil || len(l.Publishers) != 0 {
		t.Fatalf("after stop: %+v %v", l, err)
	}
}

func TestSeveralPublishersShareTheFile(t *testing.T) {
	home := t.TempDir()
	path := ListPath(home)
	c := newClock()
	// Another resolver that is alive: a child process we started.
	child := exec.Command("sleep", "30")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	// One whose process is gone: a child that has exited and been reaped.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	other := &Publisher{Path: path, Recorder: &Recorder{Now: c.now}, PID: child.Process.Pid, Now: c.now}
	dead := &Publisher{Path: path, Recorder: &Recorder{Now: c.now}, PID: gone.ProcessState.Pid(), Now: c.now}
	mine := &Publisher{Path: path, Recorder: &Recorder{Now: c.now}, Now: c.now}
	for _, p := range []*Publisher{other, dead, mine} {
		p.Recorder.Begin(waitOf("brama"))
		if err := p.Publish(); err != nil {
			t.Fatal(err)
		}
	}
	l, err := ReadList(path)
	if err != nil {
		t.Fatal(err)
	}
	pids := map[int]bool{}
	for _, p := range l.Publishers {
		pids[p.PID] = true
	}
	if !pids[child.Process.Pid] || !pids[os.Getpid()] || pids[gone.ProcessState.Pid()] || len(pids) != 2 {
		t.Fatalf("publishers %v: want the live child and this process, not the gone one", pids)
	}
	// Withdrawing removes only this process's section.
	if err := mine.Withdraw(); err != nil {
		t.Fatal(err)
	}
	l, _ = ReadList(path)
	if len(l.Publishers) != 1 || l.Publishers[0].PID != child.Process.Pid {
		t.Fatalf("after withdraw: %+v", l.Publishers)
	}
}

func TestLiveDropsPublishersThatNoLongerRun(t *testing.T) {
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	l := &WaitingList{Kind: ListKind, Version: 1, Publishers: []Publication{
		{PID: gone.ProcessState.Pid(), Waits: []Wait{waitOf("brama")}},
		{PID: os.Getpid(), Started: processStarted(os.Getpid()), Waits: []Wait{waitOf("skarbiec")}},
		// Our pid with another start time: the pid was reused.
		{PID: os.Getpid(), Started: "1", Waits: []Wait{waitOf("other")}},
	}}
	live := l.Live(Running)
	if len(live) != 1 || live[0].Waits[0].Service != "skarbiec" {
		t.Fatalf("live = %+v", live)
	}
}

func TestReadListRefusesMalformedNamingTheFile(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		// Not JSON at all.
		"garbage": "{not json",
		// JSON of another kind.
		"kind": `{"kind":"stado.beacon","version":1}`,
		// A wait without a phase we know.
		"phase": `{"kind":"stado.resolver.waiting","version":1,"publishers":[{"pid":1,"waits":[{"service":"a","host":"h","phase":"later","accepted_at":"2025-01-01T00:00:00Z"}]}]}`,
		// A publisher without a pid.
		"pid": `{"kind":"stado.resolver.waiting","version":1,"publishers":[{"waits":[]}]}`,
	}
	for name, body := range cases {
		path := filepath.Join(dir, name+".json")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := ReadList(path)
		var ue *UnreadableError
		if !errors.As(err, &ue) || ue.File != path || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: err = %v, want UnreadableError naming %s", name, err, path)
		}
	}
	// A missing list names nothing.
	l, err := ReadList(filepath.Join(dir, "absent.json"))
	if err != nil || len(l.Publishers) != 0 {
		t.Fatalf("absent: %+v %v", l, err)
	}
	// The golden shape round-trips.
	good := `{"kind":"stado.resolver.waiting","version":1,"publishers":[{"pid":7,"refresh_seconds":5,"published_at":"2025-01-01T00:00:00Z","waits":[{"id":1,"service":"brama","host":"host2","endpoint":"127.0.1.2:8080","client":"127.0.0.1:4000","request_line":"GET / HTTP/1.1","accepted_at":"2025-01-01T00:00:00Z","phase":"answer"}]}]}`
	path := filepath.Join(dir, "good.json")
	_ = os.WriteFile(path, []byte(good), 0o600)
	l, err = ReadList(path)
	if err != nil {
		t.Fatal(err)
	}
	back, _ := json.Marshal(l)
	var a, b any
	_ = json.Unmarshal(back, &a)
	_ = json.Unmarshal([]byte(good), &b)
	if ja, _ := json.Marshal(a); string(ja) != func() string { jb, _ := json.Marshal(b); return string(jb) }() {
		t.Fatalf("round trip:\n%s\n%s", back, good)
	}
}

func contextWithCancel(t *testing.T) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx, cancel
}
