package sshclient

import (
	"context"
	"fmt"
	"testing"

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
