package sshclient

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
)

// transportStub carries every call (answering "carried") or declines it.
type transportStub struct {
	carry  bool
	dialer *Dialer // the dialer the last call was handed
	calls  int
}

func (s *transportStub) Run(_ context.Context, _ registry.Target, d *Dialer, _ []string, _ []byte) ([]byte, []byte, error) {
	s.calls++
	s.dialer = d
	if !s.carry {
		return nil, nil, fmt.Errorf("%w: nothing listens", ErrNotCarried)
	}
	return []byte("carried"), nil, nil
}

// A call the transport carries never reaches the pool's own connection; a
// call it declines does, and runs once.
func TestAPoolRunsOverItsOwnConnectionOnlyWhatItsTransportDeclines(t *testing.T) {
	cases := []struct {
		name    string
		carry   bool
		want    string
		dialled int32 // connections the pool itself opened
	}{
		// the transport carries it: the host is not dialled by the pool
		{"carried", true, "carried", 0},
		// the transport declines: the pool dials and runs the call itself
		{"declined", false, "version", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			stub := &transportStub{carry: tc.carry}
			d := f.dialer()
			pool := NewPool(d)
			pool.Transport = stub
			defer pool.Close()
			out, _, err := pool.Run(context.Background(), f.srv.Target("web1"), []string{"version"}, nil)
			if err != nil || string(out) != tc.want {
				t.Fatalf("run: %q %v, want %q", out, err, tc.want)
			}
			if stub.calls != 1 || stub.dialer != d {
				t.Fatalf("the transport saw %d calls with dialer %p, want 1 with the pool's %p", stub.calls, stub.dialer, d)
			}
			if n := f.srv.Accepted.Load(); n != tc.dialled {
				t.Fatalf("the pool opened %d connections, want %d", n, tc.dialled)
			}
		})
	}
}

// Exec sends argv quoted word by word, streams stdin, never goes through the
// pool's Transport, and checks the host key like every dial.
func TestExecRunsRawArgvWithStreamedStdinOverThePoolsOwnConnection(t *testing.T) {
	f := newFixture(t)
	var gotCmd string
	f.srv.SetHandler(func(cmd string, stdin io.Reader, stdout, stderr io.Writer) int {
		gotCmd = cmd
		n, _ := io.Copy(io.Discard, stdin)
		fmt.Fprintf(stdout, "%d", n)
		return 0
	})
	stub := &transportStub{carry: true}
	pool := NewPool(f.dialer())
	pool.Transport = stub
	defer pool.Close()
	data := strings.NewReader(strings.Repeat("x", 3<<20))
	out, _, err := pool.Exec(context.Background(), f.srv.Target("web1"), []string{"dd", "of=/var/lib/stado/release/images/.s/stado", "status=none", "a b"}, data)
	if err != nil || string(out) != fmt.Sprint(3<<20) {
		t.Fatalf("exec: %q %v", out, err)
	}
	if want := "dd of=/var/lib/stado/release/images/.s/stado status=none 'a b'"; gotCmd != want {
		t.Errorf("the host got %q, want %q", gotCmd, want)
	}
	if stub.calls != 0 {
		t.Errorf("Exec went through the transport (%d calls)", stub.calls)
	}
	// a word the quoting cannot carry is refused before anything is sent
	before := f.srv.Commands.Load()
	if _, _, err := pool.Exec(context.Background(), f.srv.Target("web1"), []string{"echo", "it's"}, nil); err == nil {
		t.Error("a single quote was sent")
	}
	if f.srv.Commands.Load() != before {
		t.Error("a refused argv reached the host")
	}
	// a host whose key is not in known_hosts is refused
	other := startServer(t)
	other.Authorize(mustPublicKey(t, f.identity))
	_, _, err = NewPool(f.dialer()).Exec(context.Background(), other.Target("web2"), []string{"true"}, nil)
	if code, _ := refusal.CodeOf(err); code != refusal.HostKeyUnknown {
		t.Errorf("unknown host key: %v (code %q)", err, code)
	}
}

// adopterStub declines every call and records what a closing pool hands it.
type adopterStub struct {
	transportStub
	adopted []string // target names handed over
	program string
	dialer  *Dialer
}

func (s *adopterStub) Adopt(_ context.Context, d *Dialer, program string, targets []registry.Target) {
	s.dialer, s.program = d, program
	for _, t := range targets {
		s.adopted = append(s.adopted, t.Name)
	}
}

// A pool whose transport declined its calls dialed those hosts itself; on
// Close it hands them to the transport (a keeper keeps them for the next
// command). A host the transport carried, or whose dial failed, is not
// handed over, and a pool with nothing dialed hands nothing.
func TestAClosingPoolHandsTheHostsItDialedItselfToItsTransport(t *testing.T) {
	f := newFixture(t)
	stub := &adopterStub{}
	d := f.dialer()
	pool := NewPool(d)
	pool.Transport = stub
	if _, _, err := pool.Run(context.Background(), f.srv.Target("web1"), []string{"version"}, nil); err != nil {
		t.Fatal(err)
	}
	dead := f.srv.Target("web2")
	dead.SSH.Port = 1 // nothing listens: the dial fails
	if _, _, err := pool.Run(context.Background(), dead, []string{"version"}, nil); err == nil {
		t.Fatal("a call to a closed port succeeded")
	}
	if len(stub.adopted) != 0 {
		t.Fatalf("handed over %v before Close", stub.adopted)
	}
	pool.Close()
	if strings.Join(stub.adopted, ",") != "web1" || stub.dialer != d || stub.program != DefaultRemoteProgram {
		t.Fatalf("handed over %v with dialer %p and program %q, want web1 with the pool's %p and %q", stub.adopted, stub.dialer, stub.program, d, DefaultRemoteProgram)
	}

	empty := &adopterStub{transportStub: transportStub{carry: true}}
	pool = NewPool(d)
	pool.Transport = empty
	if _, _, err := pool.Run(context.Background(), f.srv.Target("web1"), []string{"version"}, nil); err != nil {
		t.Fatal(err)
	}
	pool.Close()
	if empty.adopted != nil || empty.dialer != nil {
		t.Fatalf("a pool that dialed nothing handed over %v", empty.adopted)
	}
}
