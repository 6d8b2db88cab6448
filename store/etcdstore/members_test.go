package etcdstore

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wisent/stado/store"
	etcdtest "github.com/wisent/stado/tests/etcd"
)

// A call passes to the next member when the first does not answer (a
// refused port, a member that accepts and stays silent) or answers that it
// has no leader; the member that answered is remembered, so the next call
// goes to it first.
func TestCallsPassToTheNextMemberWhenOneIsDownSilentOrLeaderless(t *testing.T) {
	c := etcdtest.Start(t, 1)
	good := strings.TrimPrefix(c.ClientURL(0), "http://")

	l, _ := net.Listen("tcp", "127.0.0.1:0")
	refused := l.Addr().String()
	l.Close()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			conn, err := silent.Accept()
			if err != nil {
				return
			}
			defer conn.Close()
		}
	}()
	var leaderlessCalls atomic.Int64
	leaderless := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaderlessCalls.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"error":"etcdserver: no leader","code":14,"message":"etcdserver: no leader"}`)
	}))
	defer leaderless.Close()

	for _, tc := range []struct {
		name, first string
	}{
		// nothing listens on the first endpoint
		{"refused", refused},
		// the first accepts and never answers: it is given the dial timeout
		{"silent", silent.Addr().String()},
		// the first answers that it has no leader
		{"no leader", strings.TrimPrefix(leaderless.URL, "http://")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := fmt.Sprintf("etcd://%s,%s/test/%d?dial_timeout=1s", tc.first, good, prefixes.Add(1))
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			s, err := store.Open(ctx, url)
			if err != nil {
				t.Fatalf("open with %s first: %v", tc.name, err)
			}
			defer s.Close()
			st := s.(*Store)
			if _, err := st.Put(ctx, "k", []byte("v"), store.PutOptions{}); err != nil {
				t.Fatalf("put: %v", err)
			}
			if got := st.c.cur.Load(); got != 1 {
				t.Fatalf("remembered endpoint %d, want 1 (the member that answered)", got)
			}
			before := leaderlessCalls.Load()
			start := time.Now()
			if o, err := st.Get(ctx, "k"); err != nil || string(o.Value) != "v" {
				t.Fatalf("get: %q %v", o.Value, err)
			}
			if d := time.Since(start); d > 500*time.Millisecond {
				t.Errorf("a get after the failover took %v: it went to the first endpoint again", d)
			}
			if leaderlessCalls.Load() != before {
				t.Error("a call after the failover went to the leaderless member again")
			}
		})
	}
}

// fakeAuthMember is a member with auth on that hands out tokens and
// rejects every one of them as invalid, counting the authentications.
func fakeAuthMember(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var auths atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v3/auth/authenticate" {
			n := auths.Add(1)
			fmt.Fprintf(w, `{"header":{"revision":"1"},"token":"tok%d"}`, n)
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":"etcdserver: invalid auth token","code":16,"message":"etcdserver: invalid auth token"}`)
	}))
	t.Cleanup(srv.Close)
	return srv, &auths
}

// A token etcd rejects (expired, or lost when a member restarted) is
// renewed once and the call goes on; a call whose new token is rejected
// too fails instead of authenticating again and again.
func TestATokenEtcdRejectsIsRenewedOnce(t *testing.T) {
	t.Run("real member", func(t *testing.T) {
		c := etcdtest.Start(t, 1)
		const pw = "tok-pw-77"
		enableAuth(t, c.ClientURL(0), pw)
		cfg, err := ParseURL("etcd://root:"+pw+"@"+hostPorts(c)+"/authed", nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		st, err := Open(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if _, err := st.Put(ctx, "k", []byte("v"), store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		before := st.c.authentications.Load()
		st.c.tokenMu.Lock()
		st.c.token = "notatokenetcdissued.1" // a simple token's form, at an index etcd has applied
		st.c.tokenMu.Unlock()
		if o, err := st.Get(ctx, "k"); err != nil || string(o.Value) != "v" {
			t.Fatalf("get with a rejected token: %q %v", o.Value, err)
		}
		if n := st.c.authentications.Load() - before; n != 1 {
			t.Fatalf("authenticated %d times after the token was rejected, want 1", n)
		}
		// a restarted member keeps a token only if replaying its log
		// assigns it again: either way the next write goes through
		c.Restart(0)
		before = st.c.authentications.Load()
		if _, err := st.Put(ctx, "k", []byte("w"), store.PutOptions{}); err != nil {
			t.Fatalf("put after the member restarted: %v", err)
		}
		if n := st.c.authentications.Load() - before; n > 1 {
			t.Fatalf("authenticated %d times after the restart, want at most 1", n)
		}
	})
	t.Run("token always rejected", func(t *testing.T) {
		srv, auths := fakeAuthMember(t)
		c := newClient(Config{Endpoints: []string{strings.TrimPrefix(srv.URL, "http://")}, Username: "root", Password: "pw-never-shown", DialTimeout: time.Second}, &http.Transport{}, "http://")
		err := c.call(context.Background(), "/v3/kv/range", rangeRequest{Key: []byte("k")}, &rangeResponse{}, 0)
		if !tokenRejected(err) {
			t.Fatalf("call: %v, want the token refusal", err)
		}
		if n := auths.Load(); n != 2 {
			t.Fatalf("authenticated %d times for one call, want 2 (the first token, one renewal)", n)
		}
	})
}

// An answer longer than the reader's bound is refused after the bound,
// not read whole: a member (or whoever answers in its place) that sends a
// quarter of a gigabyte to a 1 KiB read costs the reader about the bound.
func TestAnOversizedAnswerIsRefusedWithoutReadingItWhole(t *testing.T) {
	for _, announced := range []bool{false, true} {
		name := "streamed"
		if announced {
			name = "length announced"
		}
		t.Run(name, func(t *testing.T) {
			var written atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var req rangeRequest
				if json.NewDecoder(r.Body).Decode(&req) == nil && req.CountOnly {
					// the open's probe
					fmt.Fprint(w, `{"header":{"revision":"1"},"count":"0"}`)
					return
				}
				const total = 256 << 20
				if announced {
					w.Header().Set("Content-Length", fmt.Sprint(total))
				}
				chunk := []byte(`{"header":{"revision":"1"},"kvs":[{"key":"` + strings.Repeat("QUFB", 8<<10))
				for written.Load() < total {
					n, err := w.Write(chunk)
					written.Add(int64(n))
					if err != nil {
						return
					}
				}
			}))
			defer srv.Close()
			s, err := store.Open(context.Background(), "etcd://"+strings.TrimPrefix(srv.URL, "http://")+"/p")
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			start := time.Now()
			_, err = s.(*Store).GetBounded(context.Background(), "beacons/h1", 1<<10)
			runtime.ReadMemStats(&m1)
			var tl *store.TooLargeError
			if !errors.As(err, &tl) || tl.Max != 1<<10 {
				t.Fatalf("bounded get of a 256 MiB answer: %v, want a TooLargeError", err)
			}
			if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > 4<<20 {
				t.Errorf("the refused read allocated %d bytes, want about its bound", alloc)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("the refusal took %v", d)
			}
		})
	}
}

// VisitBounded on a page holding a value far over the bound reads that
// page again key by key: the large value goes to tooLarge (never read
// whole), the others to fn, and the pages after it follow.
func TestVisitBoundedReadsAPageWithAnOversizedValueKeyByKey(t *testing.T) {
	c := etcdtest.Start(t, 1)
	st := openFresh(t, c)
	ctx := context.Background()
	big := make([]byte, 1<<20)
	rand.Read(big)
	var want []string
	for i := 0; i < visitPage+20; i++ {
		k := fmt.Sprintf("beacons/h%03d", i)
		v := []byte(k)
		if i == 7 {
			v = big
		} else {
			want = append(want, k)
		}
		if _, err := st.Put(ctx, k, v, store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	var large []string
	err := st.VisitBounded(ctx, "beacons/", 1, 4<<10, func(o store.Object) {
		if string(o.Value) != o.Key {
			t.Errorf("%s: value %q", o.Key, o.Value)
		}
		got = append(got, o.Key)
	}, func(e *store.TooLargeError) { large = append(large, e.Key) })
	if err != nil {
		t.Fatal(err)
	}
	if len(large) != 1 || large[0] != "beacons/h007" {
		t.Fatalf("too large: %v, want beacons/h007", large)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("visited %d keys, want %d: %v", len(got), len(want), got)
	}
}

// A watcher hears of a member's restart: its stream ends with the member,
// a notice follows (changes may have been missed), and once the member is
// back the watch is open again and hears the next change.
func TestWatchNoticesAMemberRestartAndWatchesOnAfterIt(t *testing.T) {
	c := etcdtest.Start(t, 1)
	st := openFresh(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := st.Watch(ctx, store.BeaconPrefix)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // let the watch open
	c.Restart(0)
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("no notice within 10s of the member's restart")
	}
	time.Sleep(1500 * time.Millisecond) // the watch opens again a second after it ended
	select {
	case <-ch: // a second notice from a reopening that failed while the member started
	default:
	}
	if _, err := st.Put(ctx, store.BeaconPrefix+"host1", []byte("{}"), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("a beacon's put after the restart: no notice within 5s")
	}
}

// A watch whose token etcd no longer knows is refused (as a permission
// the user lacks); the watcher authenticates again once and the watch
// holds: no notice while nothing changes, one when a key does.
func TestWatchWithARejectedTokenAuthenticatesAgainAndHolds(t *testing.T) {
	c := etcdtest.Start(t, 1)
	const pw = "watch-pw-5"
	enableAuth(t, c.ClientURL(0), pw)
	cfg, err := ParseURL("etcd://root:"+pw+"@"+hostPorts(c)+"/authed", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watcher, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close()
	writer, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	watcher.c.tokenMu.Lock()
	watcher.c.token = "forgottentoken.1"
	watcher.c.tokenMu.Unlock()
	ch, err := watcher.Watch(ctx, store.BeaconPrefix)
	if err != nil {
		t.Fatal(err)
	}
	// the refusal, a renewal, the watch opened again a second later
	time.Sleep(2500 * time.Millisecond)
	select {
	case <-ch:
	default:
	}
	select {
	case <-ch:
		t.Fatal("a notice while nothing changed: the watch keeps failing")
	case <-time.After(2 * time.Second):
	}
	if _, err := writer.Put(ctx, store.BeaconPrefix+"h1", []byte("{}"), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-time.After(3 * time.Second):
		t.Fatal("a beacon's put: no notice within 3s")
	}
	if n := watcher.c.authentications.Load(); n != 2 {
		t.Fatalf("the watcher authenticated %d times, want 2 (at open, after the refusal)", n)
	}
}
