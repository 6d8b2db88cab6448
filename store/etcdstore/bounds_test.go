package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/store"
	etcdtest "github.com/wisent/stado/tests/etcd"
)

// An endpoint that does not answer fails the open within the dial
// timeout, naming the endpoint, instead of at the first call 30 s later.
func TestSilentEndpointFailsTheOpenWithinTheDialTimeoutNamingIt(t *testing.T) {
	// A listener that accepts and never speaks: a member that hangs.
	hang, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hang.Close()
	go func() {
		for {
			c, err := hang.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	// A port nobody listens on.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := l.Addr().String()
	l.Close()
	for _, tc := range []struct {
		name, url, endpoint string
	}{
		// a refused port, default dial timeout
		{"refused", "etcd://" + closed + "/p", closed},
		// a member that accepts and never answers
		{"silent", "etcd://" + hang.Addr().String() + "/p?dial_timeout=1s", hang.Addr().String()},
		// several endpoints, none answering: all are named
		{"two endpoints", "etcd://" + closed + "," + hang.Addr().String() + "/p?dial_timeout=1s", closed + "," + hang.Addr().String()},
		// with a password: named, never the password
		{"with a password", "etcd://ops:topsecret@" + closed + "/p?dial_timeout=1s", closed},
		// TLS to a plain listener
		{"tls", "etcd://" + hang.Addr().String() + "/p?tls=true&dial_timeout=1s", hang.Addr().String()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			st, err := store.Open(ctx, tc.url)
			if err == nil {
				st.Close()
				t.Fatal("opened a store nobody answers for")
			}
			if ctx.Err() != nil {
				t.Fatalf("the open outlived its bound: %v", err)
			}
			if !strings.Contains(err.Error(), tc.endpoint) || !strings.Contains(err.Error(), "dial_timeout") {
				t.Errorf("error %q does not name %s and the dial timeout", err, tc.endpoint)
			}
			if strings.Contains(err.Error(), "topsecret") {
				t.Errorf("error %q leaks the password", err)
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("error %q is not a deadline", err)
			}
		})
	}
}

// stado compacts etcd's history itself: after writes that cross a
// multiple of CompactEvery, revisions older than compact_retain behind the
// newest are gone, and every current value still reads.
func TestStadoCompactsTheKeySpaceBehindItsRetention(t *testing.T) {
	c := etcdtest.Start(t, 1)
	for _, tc := range []struct {
		name   string
		retain int64
		writes int
		gone   bool // is a revision older than the retention compacted
	}{
		// a small retention: old revisions go
		{"retain 100", 100, CompactEvery + 110, true},
		// a larger retention, still crossed
		{"retain 500", 500, CompactEvery + 510, true},
		// off: nothing is compacted by stado
		{"off", 0, CompactEvery + 110, false},
		// too few writes to reach a multiple of CompactEvery: nothing yet
		{"too few writes", 100, 10, false},
		// the smallest retention that still keeps something
		{"retain 1", 1, CompactEvery + 11, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := fmt.Sprintf("etcd://%s/test/%d?compact_retain=%d", hostPorts(c), prefixes.Add(1), tc.retain)
			s, err := store.Open(context.Background(), url)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			st := s.(*Store)
			ctx := context.Background()
			if tc.writes < CompactEvery {
				// Keep the few writes clear of a boundary: advance the
				// cluster's revision with raw puts (which never compact).
				for {
					var r putResponse
					mustPost(t, st.c.urls[0], "/v3/kv/put", putRequest{Key: []byte(st.base + "filler"), Value: []byte("x")}, &r)
					if rest := CompactEvery - r.Header.Revision%CompactEvery; rest > int64(tc.writes)+5 && rest < CompactEvery-5 {
						break
					}
				}
			}
			first, err := st.Put(ctx, "beacons/h", []byte("0"), store.PutOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var last int64
			for i := 0; i < tc.writes; i++ {
				if last, err = st.Put(ctx, "beacons/h", []byte(fmt.Sprint(i)), store.PutOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			err = post(ctx, st.c.urls[0], "/v3/kv/range", rangeRequest{Key: []byte(st.base + "beacons/h"), Revision: first}, &rangeResponse{})
			compacted := err != nil && strings.Contains(err.Error(), "compacted")
			if compacted != tc.gone {
				t.Errorf("revision %d (newest %d) compacted: %v (%v), want %v", first, last, compacted, err, tc.gone)
			}
			if o, err := st.Get(ctx, "beacons/h"); err != nil || o.Revision != last {
				t.Errorf("current value after compaction: %+v %v", o, err)
			}
		})
	}
}
