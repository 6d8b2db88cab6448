package resolver

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
)

func fleet() *registry.Document {
	return &registry.Document{
		Version:         1,
		ServiceResolver: registry.ServiceResolver{RefreshSeconds: 5},
		Directory: []registry.DirectoryEntry{
			{Service: "brama", Host: "host2", Port: 8080},
			{Service: "skarbiec", Host: "host1", Port: 9090, Callers: []string{"host2"}},
			{Service: "bare", Host: "host3", Port: 7000},
		},
		Targets: []registry.Target{
			{Name: "host1", SSH: registry.SSH{Address: "127.0.1.1"}, OS: "linux"},
			{Name: "host2", SSH: registry.SSH{Address: "127.0.1.2"}, OS: "linux"},
			{Name: "host3", OS: "linux"},
		},
	}
}

// countingLoader serves doc and counts reads, like a store would be read.
type countingLoader struct {
	doc   *registry.Document
	reads int
	err   error
}

func (l *countingLoader) load(context.Context) (*registry.Document, error) {
	l.reads++
	if l.err != nil {
		return nil, l.err
	}
	return l.doc, nil
}

func TestResolveThroughTheDirectory(t *testing.T) {
	cases := []struct {
		name, caller, service string
		want                  Endpoint
		code                  string // RefusalCode of the error; "" for success
		mention               []string
	}{
		// The target's ssh address is where the service answers.
		{name: "address", caller: "host1", service: "brama",
			want: Endpoint{Service: "brama", Host: "host2", Address: "127.0.1.2", Port: 8080}},
		// A target without an address answers at its name.
		{name: "name", caller: "host1", service: "bare",
			want: Endpoint{Service: "bare", Host: "host3", Address: "host3", Port: 7000}},
		// A listed caller may call.
		{name: "listed caller", caller: "host2", service: "skarbiec",
			want: Endpoint{Service: "skarbiec", Host: "host1", Address: "127.0.1.1", Port: 9090}},
		// A caller missing from a non-empty list is refused, named.
		{name: "unlisted caller", caller: "host3", service: "skarbiec", code: "caller_not_allowed",
			mention: []string{"host3", "skarbiec", "host2"}},
		// An unnamed caller cannot be on the list.
		{name: "unnamed caller", caller: "", service: "skarbiec", code: "caller_not_allowed",
			mention: []string{"skarbiec"}},
		// No directory entry: refused naming the service.
		{name: "absent", caller: "host1", service: "nothere", code: "not_found",
			mention: []string{"nothere"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := &countingLoader{doc: fleet()}
			r := &Resolver{Load: l.load, Caller: tc.caller}
			got, err := r.Resolve(context.Background(), tc.service)
			if tc.code == "" {
				if err != nil {
					t.Fatalf("Resolve: %v", err)
				}
				if got != tc.want {
					t.Fatalf("got %+v, want %+v", got, tc.want)
				}
				return
			}
			var coded refusal.Coded
			if !errors.As(err, &coded) || string(coded.RefusalCode()) != tc.code {
				t.Fatalf("err = %v, want refusal %s", err, tc.code)
			}
			for _, m := range tc.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not name %q", err, m)
				}
			}
		})
	}
}

func TestResolveURI(t *testing.T) {
	r := &Resolver{Load: (&countingLoader{doc: fleet()}).load, Caller: "host1"}
	got, err := r.Resolve(context.Background(), "stado://service/brama")
	if err != nil || got.String() != "127.0.1.2:8080" {
		t.Fatalf("got %v %v", got, err)
	}
	for _, bad := range []string{"stado://release/brama", "http://service/brama", "stado://service/", "stado://service/a/b", ""} {
		if _, err := ParseURI(bad); !errors.Is(err, ErrBadURI) {
			t.Errorf("ParseURI(%q) = %v, want ErrBadURI", bad, err)
		}
	}
}

func TestResolutionIsCachedForTheRefreshInterval(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	l := &countingLoader{doc: fleet()}
	r := &Resolver{Load: l.load, Caller: "host1", Now: func() time.Time { return now }}
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if _, err := r.Resolve(ctx, "brama"); err != nil {
			t.Fatal(err)
		}
	}
	if l.reads != 1 {
		t.Fatalf("reads within the interval = %d, want 1", l.reads)
	}
	// The directory moves; the cache still says the old place until the
	// interval has passed.
	moved := fleet()
	moved.Directory[0].Port = 8081
	l.doc = moved
	now = now.Add(4 * time.Second)
	if got, _ := r.Resolve(ctx, "brama"); got.Port != 8080 {
		t.Fatalf("port within interval = %d, want the cached 8080", got.Port)
	}
	now = now.Add(2 * time.Second)
	if got, _ := r.Resolve(ctx, "brama"); got.Port != 8081 {
		t.Fatalf("port after interval = %d, want 8081", got.Port)
	}
	if r.RefreshSeconds() != 5 {
		t.Fatalf("RefreshSeconds = %d", r.RefreshSeconds())
	}
}

func TestFailedRefreshKeepsTheLastDirectory(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	l := &countingLoader{doc: fleet()}
	r := &Resolver{Load: l.load, Caller: "host1", Now: func() time.Time { return now }}
	ctx := context.Background()
	if _, err := r.Resolve(ctx, "brama"); err != nil {
		t.Fatal(err)
	}
	l.err = errors.New("store down")
	now = now.Add(10 * time.Second)
	if got, err := r.Resolve(ctx, "brama"); err != nil || got.Port != 8080 {
		t.Fatalf("after failed refresh: %v %v", got, err)
	}
	// Nothing ever read: the error is the caller's.
	r2 := &Resolver{Load: l.load, Caller: "host1"}
	if _, err := r2.Resolve(ctx, "brama"); err == nil || !strings.Contains(err.Error(), "store down") {
		t.Fatalf("first read error = %v", err)
	}
}

// A service on several hosts resolves to the caller's own copy first, at the
// address its entry declares (loopback included); other callers get the
// first entry.
func TestServiceOnSeveralHostsResolvesToTheCallersOwnCopyFirst(t *testing.T) {
	doc := fleet()
	doc.Directory = append(doc.Directory,
		registry.DirectoryEntry{Service: "brama", Host: "host1", Address: "127.0.0.1", Port: 8080})
	got, err := resolveIn(doc, "brama", "host1")
	if err != nil {
		t.Fatal(err)
	}
	if want := (Endpoint{Service: "brama", Host: "host1", Address: "127.0.0.1", Port: 8080}); got != want {
		t.Fatalf("from host1: %+v, want %+v", got, want)
	}
	got, err = resolveIn(doc, "brama", "host3")
	if err != nil {
		t.Fatal(err)
	}
	if got.Host != "host2" || got.Address != "127.0.1.2" {
		t.Fatalf("from host3: %+v, want host2's entry", got)
	}
}
