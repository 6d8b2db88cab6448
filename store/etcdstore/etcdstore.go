// Package etcdstore is the etcd v3 backend of store.Store, selected by a
// store URL etcd://HOST:PORT[,HOST:PORT...]/PREFIX (see ParseURL and
// docs/etcd.md). Importing it for its side effect registers the "etcd"
// scheme with store.Open; the cli package does so in cli/backends.go.
//
// It speaks etcd's v3 JSON gateway (POST /v3/kv/range and the like on
// every member's client URL, served by etcd 3.4 and later) with the
// standard library's HTTP client, so linking it costs no etcd client, gRPC
// or protobuf packages. It imports store only; nothing in stado imports it
// but cli.
//
// Mapping: store key K is etcd key PREFIX/K; an object's revision is the
// key's mod revision (global to the cluster, so revisions of one key grow
// but skip); compare-and-swap is one transaction comparing the mod
// revision (the create revision for "must be absent"); a TTL is a lease
// kept per key and refreshed on every write; List reads by key range in
// pages of 1,000 keys, all at the revision of the first page.
//
// Members: every call goes to the member that answered last; a member that
// does not answer (or answers that it has no leader: each request asks for
// one) passes the call to the next, and a transient failure is retried
// with back-off within the request timeout. A reader's bound also bounds
// the answer it reads off the wire.
package etcdstore

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/wisent/stado/store"
)

func init() {
	store.RegisterBackend("etcd", func(ctx context.Context, rest string) (store.Store, error) {
		cfg, err := ParseURL("etcd://"+rest, os.Getenv)
		if err != nil {
			return nil, err
		}
		return Open(ctx, cfg)
	})
}

// PageSize is how many keys one List request reads.
const PageSize = 1000

// Store is a store.Store on etcd. Safe for concurrent use by many
// goroutines; many processes may share one cluster and prefix.
type Store struct {
	c       *client
	tr      *http.Transport
	cfg     Config
	base    string // Prefix + "/"
	timeout time.Duration

	// pageSize and leasePerPut are fixed at Open; tests in this package
	// change them to exercise pagination and to measure the lease policy.
	pageSize    int
	leasePerPut bool

	mu     sync.Mutex
	leases map[string]heldLease // store key -> the lease its TTL rides on

	packing packingGate
}

var (
	_ store.Store          = (*Store)(nil)
	_ store.RevisionReader = (*Store)(nil)
)

// heldLease is the lease granted for one key's TTL writes.
type heldLease struct {
	id  int64
	ttl int64 // seconds
}

// idleConnsPerMember is how many connections to one member are kept for
// reuse: enough for the writers a command runs at once (16 seed a fleet)
// and a watch.
const idleConnsPerMember = 32

// Open connects to the cluster cfg names and asks it one cheap question
// (authenticating first when cfg has a user): each member in turn is given
// cfg.DialTimeout to answer. Errors never contain the password.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if len(cfg.Endpoints) == 0 || cfg.Prefix == "" {
		return nil, errors.New("open etcd store: no endpoints or no prefix")
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = DefaultDialTimeout
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	scheme := "http://"
	var tlsConfig *tls.Config
	if cfg.TLS {
		var err error
		if tlsConfig, err = loadTLS(cfg); err != nil {
			return nil, fmt.Errorf("open etcd store: %w", err)
		}
		scheme = "https://"
	}
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         dialer(cfg.DialTimeout),
		TLSClientConfig:     tlsConfig,
		TLSHandshakeTimeout: cfg.DialTimeout,
		MaxIdleConns:        idleConnsPerMember * len(cfg.Endpoints),
		MaxIdleConnsPerHost: idleConnsPerMember,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	st := &Store{
		c:        newClient(cfg, tr, scheme),
		tr:       tr,
		cfg:      cfg,
		base:     cfg.Prefix + "/",
		timeout:  cfg.RequestTimeout,
		pageSize: PageSize,
		leases:   map[string]heldLease{},
	}
	if err := st.probe(ctx); err != nil {
		tr.CloseIdleConnections()
		return nil, err
	}
	return st, nil
}

func loadTLS(cfg Config) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.CACert != "" {
		pem, err := os.ReadFile(cfg.CACert)
		if err != nil {
			return nil, fmt.Errorf("read cacert: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("cacert %s holds no PEM certificate", cfg.CACert)
		}
		tc.RootCAs = pool
	}
	if cfg.Cert != "" {
		pair, err := tls.LoadX509KeyPair(cfg.Cert, cfg.Key)
		if err != nil {
			return nil, fmt.Errorf("load cert %s and key %s: %w", cfg.Cert, cfg.Key, err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return tc, nil
}

// Config returns the configuration the store was opened with.
func (s *Store) Config() Config { return s.cfg }

// Close lets the kept connections go. Leases are left to expire by their
// TTL, so a beacon outlives a clean exit by at most its staleness bound,
// as it outlives a crash.
func (s *Store) Close() error {
	s.tr.CloseIdleConnections()
	return nil
}

func (s *Store) etcdKey(key string) (string, error) {
	if err := store.ValidateKey(key); err != nil {
		return "", err
	}
	return s.base + key, nil
}

// valueBody bounds the answer of a range of n keys whose values are at
// most limit bytes once decoded: their stored form (a marker, or gzip's
// few bytes of overhead on an incompressible value) in base64, the key in
// base64 and the revisions, plus the response's header.
func (s *Store) valueBody(n int, limit int64) int64 {
	stored := limit + limit/1000 + int64(len(valueMarker)) + 64
	key := int64(len(s.base) + store.MaxKeyLength)
	per := (stored+2)/3*4 + (key+2)/3*4 + 512
	return int64(n)*per + 1024
}

// Get returns the object at key with its mod revision, or an error
// wrapping store.ErrNotFound. The read is linearizable.
func (s *Store) Get(ctx context.Context, key string) (store.Object, error) {
	return s.GetBounded(ctx, key, 0)
}

// GetBounded is Get refusing, with a *store.TooLargeError, a value over
// max bytes (max > 0): the answer is read no further than such a value
// takes, and a compressed value is expanded no further than max.
func (s *Store) GetBounded(ctx context.Context, key string, max int64) (store.Object, error) {
	k, err := s.etcdKey(key)
	if err != nil {
		return store.Object{}, err
	}
	ctx, cancel := s.opContext(ctx)
	defer cancel()
	var bound int64
	if max > 0 {
		bound = s.valueBody(1, max)
	}
	var resp rangeResponse
	err = s.retry(ctx, func() error {
		return s.c.call(ctx, "/v3/kv/range", rangeRequest{Key: []byte(k)}, &resp, bound)
	})
	tooLarge := &store.TooLargeError{Key: key, Size: max + 1, Max: max}
	var tl *bodyTooLargeError
	if errors.As(err, &tl) && max > 0 {
		return store.Object{}, fmt.Errorf("get %s: %w", key, tooLarge)
	}
	if err != nil {
		return store.Object{}, s.wrap("get", key, err)
	}
	if len(resp.Kvs) == 0 {
		return store.Object{}, fmt.Errorf("get %s: %w", key, store.ErrNotFound)
	}
	kv := resp.Kvs[0]
	v, err := decodeValueMax(kv.Value, int(max))
	if errors.Is(err, errOverBound) {
		return store.Object{}, fmt.Errorf("get %s: %w", key, tooLarge)
	}
	if err != nil {
		return store.Object{}, fmt.Errorf("get %s: %w", key, err)
	}
	return store.Object{Key: key, Value: v, Revision: kv.ModRevision}, nil
}

// Revision returns key's mod revision without its value (a keys-only
// range), or an error wrapping store.ErrNotFound; it makes Store a
// store.RevisionReader.
func (s *Store) Revision(ctx context.Context, key string) (int64, error) {
	k, err := s.etcdKey(key)
	if err != nil {
		return 0, err
	}
	ctx, cancel := s.opContext(ctx)
	defer cancel()
	var resp rangeResponse
	err = s.retry(ctx, func() error {
		return s.c.call(ctx, "/v3/kv/range", rangeRequest{Key: []byte(k), KeysOnly: true}, &resp, smallBody)
	})
	if err != nil {
		return 0, s.wrap("get", key, err)
	}
	if len(resp.Kvs) == 0 {
		return 0, fmt.Errorf("get %s: %w", key, store.ErrNotFound)
	}
	return resp.Kvs[0].ModRevision, nil
}

// CompareAndSwap writes value at key only if the key's mod revision is
// expect (0: the key must not exist), in one transaction whose other
// branch reads the key, so a *store.ConflictError names the revision
// the store held at that moment.
func (s *Store) CompareAndSwap(ctx context.Context, key string, value []byte, expect int64, opts store.PutOptions) (int64, error) {
	k, err := s.etcdKey(key)
	if err != nil {
		return 0, err
	}
	if expect < 0 {
		return 0, fmt.Errorf("compare-and-swap %s: expected revision %d is negative", key, expect)
	}
	stored, err := encodeValue(value, s.packs(ctx, len(value)))
	if err != nil {
		return 0, fmt.Errorf("compare-and-swap %s: %w", key, err)
	}
	ctx, cancel := s.opContext(ctx)
	defer cancel()
	cmp := compare{Result: "EQUAL", Target: "MOD", Key: []byte(k), ModRevision: fmt.Sprint(expect)}
	if expect == 0 {
		cmp = compare{Result: "EQUAL", Target: "CREATE", Key: []byte(k), CreateRevision: "0"}
	}
	var rev int64
	ambiguous := false // an earlier attempt may have been applied
	err = s.withLease(ctx, key, opts, func(lease int64) error {
		return s.retry(ctx, func() error {
			req := txnRequest{
				Compare: []compare{cmp},
				Success: []requestOp{{RequestPut: &putRequest{Key: []byte(k), Value: stored, Lease: lease}}},
				Failure: []requestOp{{RequestRange: &rangeRequest{Key: []byte(k)}}},
			}
			var resp txnResponse
			if err := s.c.call(ctx, "/v3/kv/txn", req, &resp, 0); err != nil {
				ambiguous = ambiguous || transient(err)
				return err
			}
			if resp.Succeeded {
				rev = resp.Header.Revision
				s.maybeCompact(ctx, rev)
				return nil
			}
			var got int64
			if len(resp.Responses) > 0 && resp.Responses[0].ResponseRange != nil && len(resp.Responses[0].ResponseRange.Kvs) > 0 {
				kv := resp.Responses[0].ResponseRange.Kvs[0]
				got = kv.ModRevision
				// A retried transaction that finds exactly the bytes it
				// meant to write, written after expect, is its own earlier
				// attempt that was applied while its answer was lost.
				if ambiguous && got > expect && bytes.Equal(kv.Value, stored) {
					rev = got
					return nil
				}
			}
			return &store.ConflictError{Key: key, Want: expect, Got: got}
		})
	})
	if err != nil {
		var ce *store.ConflictError
		if errors.As(err, &ce) {
			return 0, ce
		}
		return 0, s.wrap("compare-and-swap", key, err)
	}
	return rev, nil
}

// Put writes value at key unconditionally and returns its mod revision.
func (s *Store) Put(ctx context.Context, key string, value []byte, opts store.PutOptions) (int64, error) {
	k, err := s.etcdKey(key)
	if err != nil {
		return 0, err
	}
	stored, err := encodeValue(value, s.packs(ctx, len(value)))
	if err != nil {
		return 0, fmt.Errorf("put %s: %w", key, err)
	}
	ctx, cancel := s.opContext(ctx)
	defer cancel()
	var rev int64
	err = s.withLease(ctx, key, opts, func(lease int64) error {
		return s.retry(ctx, func() error {
			var resp putResponse
			err := s.c.call(ctx, "/v3/kv/put", putRequest{Key: []byte(k), Value: stored, Lease: lease}, &resp, smallBody)
			if err == nil {
				rev = resp.Header.Revision
				s.maybeCompact(ctx, rev)
			}
			return err
		})
	})
	if err != nil {
		return 0, s.wrap("put", key, err)
	}
	return rev, nil
}

// Delete removes key; an absent key returns an error wrapping
// store.ErrNotFound. The key's lease, if any, is left to expire.
func (s *Store) Delete(ctx context.Context, key string) error {
	k, err := s.etcdKey(key)
	if err != nil {
		return err
	}
	ctx, cancel := s.opContext(ctx)
	defer cancel()
	s.forgetLease(key)
	var deleted int64
	ambiguous := false
	err = s.retry(ctx, func() error {
		var resp deleteRangeResponse
		if err := s.c.call(ctx, "/v3/kv/deleterange", deleteRangeRequest{Key: []byte(k)}, &resp, smallBody); err != nil {
			ambiguous = ambiguous || transient(err)
			return err
		}
		deleted = resp.Deleted
		return nil
	})
	if err != nil {
		return s.wrap("delete", key, err)
	}
	if deleted == 0 && !ambiguous {
		return fmt.Errorf("delete %s: %w", key, store.ErrNotFound)
	}
	return nil
}

// List returns every object whose key starts with prefix, sorted by key.
// It reads pages of PageSize keys, all at the revision the first page was
// read at, so the result is one consistent snapshot however many pages it
// takes. Keys under the store prefix that break the key grammar (written
// by something other than stado) are left out.
func (s *Store) List(ctx context.Context, prefix string) ([]store.Object, error) {
	var out []store.Object
	err := s.listing(ctx, prefix, false, func() { out = out[:0] }, func(key string, kv keyValue) error {
		v, err := decodeValue(kv.Value)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		out = append(out, store.Object{Key: key, Value: v, Revision: kv.ModRevision})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Keys returns the keys List would return, asking etcd for the keys only
// (no value crosses the wire).
func (s *Store) Keys(ctx context.Context, prefix string) ([]string, error) {
	var out []string
	err := s.listing(ctx, prefix, true, func() { out = out[:0] }, func(key string, _ keyValue) error {
		out = append(out, key)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// listing is List's and Keys' walk of prefix: the prefix checked, the
// pages read (pages) with transient failures retried, and the whole walk
// started over (after restart, which empties what fn gathered) when a
// compaction between two pages removed the revision it was pinned to.
func (s *Store) listing(ctx context.Context, prefix string, keysOnly bool, restart func(), fn func(key string, kv keyValue) error) error {
	if strings.ContainsRune(prefix, 0) || strings.Contains(prefix, "..") || len(prefix) > store.MaxKeyLength {
		return fmt.Errorf("prefix %q: %w", prefix, store.ErrInvalidKey)
	}
	ctx, cancel := s.opContext(ctx)
	defer cancel()
	err := s.retry(ctx, func() error {
		var err error
		for attempt := 0; attempt < 3; attempt++ {
			restart()
			if err = s.pages(ctx, prefix, keysOnly, fn); !errors.Is(err, errCompacted) {
				break
			}
		}
		return err
	})
	if err != nil {
		return s.wrap("list", prefix, err)
	}
	return nil
}

// pages reads the keys under prefix a page at a time, every page at the
// first page's revision, and hands each valid key on with its pair (the
// value left empty when keysOnly).
func (s *Store) pages(ctx context.Context, prefix string, keysOnly bool, fn func(key string, kv keyValue) error) error {
	from := []byte(s.base + prefix)
	end := prefixEnd(from)
	var rev int64
	for {
		var resp rangeResponse
		req := rangeRequest{Key: from, RangeEnd: end, Limit: int64(s.pageSize), Revision: rev, KeysOnly: keysOnly}
		if err := s.c.call(ctx, "/v3/kv/range", req, &resp, 0); err != nil {
			return err
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			key := strings.TrimPrefix(string(kv.Key), s.base)
			if store.ValidateKey(key) != nil {
				continue
			}
			if err := fn(key, kv); err != nil {
				return err
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return nil
		}
		from = append(resp.Kvs[len(resp.Kvs)-1].Key, 0)
	}
}

// withLease runs write with the lease opts ask for: none (0) without a
// TTL, otherwise the key's lease, refreshed (or granted) first. A lease
// that expired between the refresh and the write is granted anew once.
func (s *Store) withLease(ctx context.Context, key string, opts store.PutOptions, write func(lease int64) error) error {
	if opts.TTL <= 0 {
		s.forgetLease(key)
		return write(0)
	}
	ttl := int64(math.Ceil(opts.TTL.Seconds()))
	for attempt := 0; ; attempt++ {
		id, err := s.lease(ctx, key, ttl)
		if err != nil {
			return err
		}
		err = write(id)
		if errors.Is(err, errLeaseNotFound) && attempt == 0 {
			s.forgetLease(key)
			continue
		}
		return err
	}
}

// lease returns a live lease of ttl seconds for key: the one held, after a
// keep-alive that restarts its countdown, or a new grant. With leasePerPut
// it grants a new lease every time and the old ones expire by themselves.
func (s *Store) lease(ctx context.Context, key string, ttl int64) (int64, error) {
	s.mu.Lock()
	held, ok := s.leases[key]
	s.mu.Unlock()
	if ok && held.ttl == ttl && !s.leasePerPut {
		err := s.retry(ctx, func() error { return s.keepAliveOnce(ctx, held.id) })
		if err == nil {
			return held.id, nil
		}
		if !errors.Is(err, errLeaseNotFound) {
			return 0, fmt.Errorf("refresh lease: %w", err)
		}
	}
	var grant leaseGrantResponse
	err := s.retry(ctx, func() error {
		return s.c.call(ctx, "/v3/lease/grant", leaseGrantRequest{TTL: ttl}, &grant, smallBody)
	})
	if err == nil && grant.Error != "" {
		err = errors.New(grant.Error)
	}
	if err != nil {
		return 0, fmt.Errorf("grant lease of %ds: %w", ttl, err)
	}
	s.mu.Lock()
	s.leases[key] = heldLease{id: grant.ID, ttl: ttl}
	s.mu.Unlock()
	return grant.ID, nil
}

// keepAliveOnce restarts lease id's countdown: one message on the
// keep-alive stream, whose answer carries the lease's TTL (none: the lease
// is gone).
func (s *Store) keepAliveOnce(ctx context.Context, id int64) error {
	body, err := s.c.stream(ctx, "/v3/lease/keepalive", leaseKeepAliveRequest{ID: id})
	if err != nil {
		return err
	}
	defer body.Close()
	var msg struct {
		Result *leaseKeepAliveResponse `json:"result"`
		Error  *streamError            `json:"error"`
	}
	if err := newStreamDecoder(body, smallBody).Decode(&msg); err != nil {
		return &memberError{"keep-alive", err}
	}
	// The member ends the stream once it has read the request's end; a
	// body read to its end leaves the connection to the next call.
	_, _ = io.Copy(io.Discard, io.LimitReader(body, smallBody))
	switch {
	case msg.Error != nil:
		return &rpcError{Code: msg.Error.GRPCCode, Message: msg.Error.Message}
	case msg.Result == nil || msg.Result.TTL <= 0:
		return errLeaseNotFound
	}
	return nil
}

func (s *Store) forgetLease(key string) {
	s.mu.Lock()
	delete(s.leases, key)
	s.mu.Unlock()
}

// opContext bounds a call by the store's request timeout when ctx has no
// deadline of its own.
func (s *Store) opContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, s.timeout)
}

// retry runs op again after a transient error (no leader, leader changed,
// no member answered) with back-off until ctx ends; any other result is
// final.
func (s *Store) retry(ctx context.Context, op func() error) error {
	wait := 20 * time.Millisecond
	for {
		err := op()
		if err == nil || !transient(err) || ctx.Err() != nil {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		if wait < time.Second {
			wait *= 2
		}
	}
}

// wrap words a failed call as "<verb> <key>: etcd ...: <cause>", explaining
// the causes an operator can act on.
func (s *Store) wrap(verb, key string, err error) error {
	err = scrub(err, s.cfg.Password)
	var re *rpcError
	switch {
	case errors.Is(err, errRequestTooLarge), errors.As(err, &re) && re.Code == codeResourceExhausted:
		return fmt.Errorf("%s %s: etcd refused the request as too large (its --max-request-bytes, 1.5 MiB by default, bounds one write even after stado's compression): %w", verb, key, err)
	case errors.Is(err, errAuthFailed), errors.Is(err, errPermissionDenied), errors.Is(err, errUserEmpty):
		return fmt.Errorf("%s %s: etcd %s as user %q: %w", verb, key, strings.Join(s.cfg.Endpoints, ","), s.cfg.Username, err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s %s: etcd %s did not answer in time: %w", verb, key, strings.Join(s.cfg.Endpoints, ","), err)
	}
	return fmt.Errorf("%s %s: etcd: %w", verb, key, err)
}
