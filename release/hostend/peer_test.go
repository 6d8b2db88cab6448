package hostend_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/release"
	"github.com/wisent/stado/release/hostend"
)

// chunkPeer serves chunks by digest from a map; lie answers every request
// with other bytes.
func chunkPeer(t *testing.T, chunks map[string][]byte, lie bool, asked *int32) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		atomic.AddInt32(asked, 1)
		if r.URL.Path != "/api/release/chunk" {
			http.NotFound(w, r)
			return
		}
		b, ok := chunks[r.URL.Query().Get("sha256")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if lie {
			b = append([]byte(nil), b...)
			b[0] ^= 0xff
		}
		_, _ = w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestChunksTheStoreLacksComeFromAPeerVerifiedByDigest(t *testing.T) {
	f := newFixture(t)
	f.publish("1.0.0", "serve")
	held := map[string][]byte{}
	for k, v := range f.src.chunks {
		held[k] = v
	}
	f.src.chunks = map[string][]byte{} // the store lost them
	var liarAsked, goodAsked int32
	liar := chunkPeer(t, held, true, &liarAsked)
	good := chunkPeer(t, held, false, &goodAsked)
	f.host.Source = hostend.PeerSource{Source: f.src, Peers: func(context.Context) []hostend.Peer {
		return []hostend.Peer{{Host: "h2", URL: liar.URL}, {Host: "h3", URL: good.URL}}
	}}
	res := f.activate("1.0.0")
	if res.Outcome != release.OutcomeActivated || res.Fetched != "peer h3" {
		t.Fatalf("outcome %q fetched %q, want activated from peer h3", res.Outcome, res.Fetched)
	}
	if atomic.LoadInt32(&liarAsked) == 0 || atomic.LoadInt32(&goodAsked) == 0 {
		t.Fatalf("asked h2 %d and h3 %d times, want both asked", liarAsked, goodAsked)
	}
}

func TestATamperedStoreIsRefusedWithoutAskingPeers(t *testing.T) {
	f := newFixture(t)
	b := f.publish("1.0.0", "serve")
	held := map[string][]byte{}
	for k, v := range f.src.chunks {
		held[k] = append([]byte(nil), v...)
	}
	m := f.manifestOf("1.0.0", b)
	f.src.chunks[m.Chunks[0].SHA256][0] ^= 0xff
	var asked int32
	peer := chunkPeer(t, held, false, &asked)
	f.host.Source = hostend.PeerSource{Source: f.src, Peers: func(context.Context) []hostend.Peer {
		return []hostend.Peer{{Host: "h3", URL: peer.URL}}
	}}
	_, err := f.host.Activate(context.Background(), f.request("1.0.0"))
	if codeOf(t, err) != refusal.ReleaseTampered || atomic.LoadInt32(&asked) != 0 {
		t.Fatalf("%v after %d peer request(s), want release_tampered and no peer asked", err, asked)
	}
}

func TestNoPeerHoldingAChunkKeepsTheStoresRefusal(t *testing.T) {
	f := newFixture(t)
	f.publish("1.0.0", "serve")
	f.src.chunks = map[string][]byte{}
	var asked int32
	empty := chunkPeer(t, map[string][]byte{}, false, &asked)
	f.host.Source = hostend.PeerSource{Source: f.src, Peers: func(context.Context) []hostend.Peer {
		return []hostend.Peer{{Host: "h3", URL: empty.URL}}
	}}
	before := treeHash(t, f.root)
	_, err := f.host.Activate(context.Background(), f.request("1.0.0"))
	if codeOf(t, err) != refusal.NotFound || !strings.Contains(err.Error(), "no peer (h3) holds chunk") {
		t.Fatalf("%v, want not_found naming the peers asked", err)
	}
	if treeHash(t, f.root) != before {
		t.Fatal("a failed fetch wrote")
	}
}
