package hostend

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/release"
)

// Peer is another host whose API may hold a release's chunks.
type Peer struct {
	Host string
	URL  string // http://ADDR:PORT
}

// MaxPeerChunk bounds the bytes read for one chunk from a peer.
const MaxPeerChunk = 1 << 20

// PeerSource is a Source that, when Source lacks bytes (a not_found
// refusal from its Fetch), reads every chunk from peers' host APIs (GET
// /api/release/chunk?sha256=HEX&image=HEX&offset=N&size=M), trying the
// peers in order for each chunk. A chunk is kept only when it has its
// signed size and digest; a peer's other answers are passed over. Any
// other refusal of Source (a tampered chunk) stands: peers are asked only
// for what the store does not have.
type PeerSource struct {
	Source Source
	// Peers lists the hosts to ask.
	Peers func(ctx context.Context) []Peer
	// Client makes the requests; nil means one with a 30 s timeout.
	Client *http.Client
}

// Signed implements Source: manifests come from Source only.
func (s PeerSource) Signed(ctx context.Context, product, version, goos, goarch string) (release.Signed, error) {
	return s.Source.Signed(ctx, product, version, goos, goarch)
}

// Fetch implements Source.
func (s PeerSource) Fetch(ctx context.Context, m release.Manifest) ([]byte, string, error) {
	b, from, err := s.Source.Fetch(ctx, m)
	if c, _ := refusal.CodeOf(err); err == nil || c != refusal.NotFound || s.Peers == nil {
		return b, from, err
	}
	peers := s.Peers(ctx)
	if len(peers) == 0 {
		return nil, "", err
	}
	client := s.Client
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	out := make([]byte, 0, m.Size)
	var used []string
	var off int64
	for _, c := range m.Chunks {
		got, host := fetchChunk(ctx, client, peers, m.SHA256, c, off)
		if got == nil {
			return nil, "", fmt.Errorf("%w; no peer (%s) holds chunk %s either", err, peerNames(peers), c.SHA256)
		}
		out = append(out, got...)
		off += c.Size
		if len(used) == 0 || used[len(used)-1] != host {
			used = append(used, host)
		}
	}
	return out, "peer " + strings.Join(dedupe(used), ", "), nil
}

// fetchChunk asks each peer for c until one answers with its bytes.
func fetchChunk(ctx context.Context, client *http.Client, peers []Peer, image string, c release.Chunk, off int64) ([]byte, string) {
	if c.Size <= 0 || c.Size > MaxPeerChunk {
		return nil, ""
	}
	q := url.Values{"sha256": {c.SHA256}, "image": {image}, "offset": {strconv.FormatInt(off, 10)}, "size": {strconv.FormatInt(c.Size, 10)}}
	for _, p := range peers {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/api/release/chunk?"+q.Encode(), nil)
		if err != nil {
			continue
		}
		b, err := readChunk(client, req, c.Size)
		if err != nil {
			continue
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) == c.SHA256 {
			return b, p.Host
		}
	}
	return nil, ""
}

func readChunk(client *http.Client, req *http.Request, size int64) ([]byte, error) {
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered %s", req.URL.Host, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, size+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) != size {
		return nil, errors.New("a chunk of another size")
	}
	return b, nil
}

func peerNames(ps []Peer) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Host
	}
	return strings.Join(names, ", ")
}

func dedupe(ss []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
