// Package etcdstore is the etcd v3 backend of store.Store, selected by a
// store URL etcd://HOST:PORT[,HOST:PORT...]/PREFIX (see ParseURL and
// docs/etcd.md). Importing it for its side effect registers the "etcd"
// scheme with store.Open; the cli package does so in cli/backends.go.
//
// It lives in its own package so that a program that only reads a file
// store does not link the etcd client and gRPC. It imports store and the
// etcd client only; nothing in stado imports it but cli.
//
// Mapping: store key K is etcd key PREFIX/K; an object's revision is the
// key's mod revision (global to the cluster, so revisions of one key grow
// but skip); compare-and-swap is one transaction comparing the mod
// revision (the create revision for "must be absent"); a TTL is a lease
// kept per key and refreshed on every write; List reads by key range in
// pages of 1,000 keys, all at the revision of the first page.
package etcdstore

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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
	cli     *clientv3.Client
	cfg     Config
	base    string // Prefix + "/"
	timeout time.Duration

	// pageSize and leasePerPut are fixed at Open; tests in this package
	// change them to exercise pagination and to measure the lease policy.
	pageSize    int
	leasePerPut bool

	mu     sync.Mutex
	leases map[string]heldLease // store key -> the lease its TTL rides on
}

var (
	_ store.Store          = (*Store)(nil)
	_ store.RevisionReader = (*Store)(nil)
)

// heldLease is the lease granted for one key's TTL writes.
type heldLease struct {
	id  clientv3.LeaseID
	ttl int64 // seconds
}

// Open connects to the cluster cfg names. It does not wait for a member to
// answer: the first call reports an unreachable cluster, within
// cfg.RequestTimeout. Errors never contain the password.
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
	eps := make([]string, len(cfg.Endpoints))
	for i, ep := range cfg.Endpoints {
		eps[i] = scheme + ep
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   eps,
		DialTimeout: cfg.DialTimeout,
		TLS:         tlsConfig,
		Username:    cfg.Username,
		Password:    cfg.Password,
		// Big enough that etcd's own limit (--max-request-bytes) is the
		// one a too-large write meets, with etcd's message.
		MaxCallSendMsgSize: 64 << 20,
		MaxCallRecvMsgSize: math.MaxInt32,
		Logger:             zap.NewNop(),
		Context:            context.WithoutCancel(ctx),
	})
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("open etcd store %s: no member answered within %v (dial_timeout): %w", cfg, cfg.DialTimeout, err)
		}
		return nil, fmt.Errorf("open etcd store %s: %w", cfg, scrub(err, cfg.Password))
	}
	st := &Store{
		cli:      cli,
		cfg:      cfg,
		base:     cfg.Prefix + "/",
		timeout:  cfg.RequestTimeout,
		pageSize: PageSize,
		leases:   map[string]heldLease{},
	}
	if err := st.probe(ctx); err != nil {
		cli.Close()
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

// Close ends the client. Leases are left to expire by their TTL, so a
// beacon outlives a clean exit by at most its staleness bound, as it
// outlives a crash.
func (s *Store) Close() error { return s.cli.Close() }

func (s *Store) etcdKey(key string) (string, error) {
	if err := store.ValidateKey(key); err != nil {
		return "", err
	}
	return s.base + key, nil
}

// Get returns the object at key with its mod revision, or an error
// wrapping store.ErrNotFound. The read is linearizable.
func (s *Store) Get(ctx context.Context, key string) (store.Object, error) {
	return s.GetBounded(ctx, key, 0)
}

// GetBounded is Get refusing, with a *store.TooLargeError, a value over
// max bytes (max > 0); a compressed value is expanded no further than max.
func (s *Store) GetBounded(ctx context.Context, key string, max int64) (store.Object, error) {
	k, err := s.etcdKey(key)
	if err != nil {
		return store.Object{}, err
	}
	ctx, cancel := s.opContext(ctx)
	defer cancel()
	var resp *clientv3.GetResponse
	err = s.retry(ctx, func() (err error) {
		resp, err = s.cli.Get(ctx, k)
		return err
	})
	if err != nil {
		return store.Object{}, s.wrap("get", key, err)
	}
	if len(resp.Kvs) == 0 {
		return store.Object{}, fmt.Errorf("get %s: %w", key, store.ErrNotFound)
	}
	kv := resp.Kvs[0]
	v, err := decodeValueMax(kv.Value, int(max))
	if errors.Is(err, errOverBound) {
		return store.Object{}, fmt.Errorf("get %s: %w", key, &store.TooLargeError{Key: key, Size: max + 1, Max: max})
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
	var resp *clientv3.GetResponse
	err = s.retry(ctx, func() (err error) {
		resp, err = s.cli.Get(ctx, k, clientv3.WithKeysOnly())
		return err
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
	stored, err := encodeValue(value)
	if err != nil {
		return 0, fmt.Errorf("compare-and-swap %s: %w", key, err)
	}
	ctx, cancel := s.opContext(ctx)
	defer cancel()
	cmp := clientv3.Compare(clientv3.ModRevision(k), "=", expect)
	if expect == 0 {
		cmp = clientv3.Compare(clientv3.CreateRevision(k), "=", 0)
	}
	var rev int64
	ambiguous := false // an earlier attempt may have been applied
	err = s.withLease(ctx, key, opts, func(put []clientv3.OpOption) error {
		return s.retry(ctx, func() error {
			resp, err := s.cli.Txn(ctx).If(cmp).Then(clientv3.OpPut(k, string(stored), put...)).Else(clientv3.OpGet(k)).Commit()
			if err != nil {
				ambiguous = ambiguous || transient(err)
				return err
			}
			if resp.Succeeded {
				rev = resp.Header.Revision
				s.maybeCompact(ctx, rev)
				return nil
			}
			var got int64
			var kvs = resp.Responses[0].GetResponseRange().GetKvs()
			if len(kvs) > 0 {
				got = kvs[0].ModRevision
				// A retried transaction that finds exactly the bytes it
				// meant to write, written after expect, is its own earlier
				// attempt that was applied while its answer was lost.
				if ambiguous && got > expect && bytes.Equal(kvs[0].Value, stored) {
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
	stored, err := encodeValue(value)
	if err != nil {
		return 0, fmt.Errorf("put %s: %w", key, err)
	}
	ctx, cancel := s.opContext(ctx)
	defer cancel()
	var rev int64
	err = s.withLease(ctx, key, opts, func(put []clientv3.OpOption) error {
		return s.retry(ctx, func() error {
			resp, err := s.cli.Put(ctx, k, string(stored), put...)
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
		resp, err := s.cli.Delete(ctx, k)
		if err != nil {
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
	if strings.ContainsRune(prefix, 0) || strings.Contains(prefix, "..") || len(prefix) > store.MaxKeyLength {
		return nil, fmt.Errorf("prefix %q: %w", prefix, store.ErrInvalidKey)
	}
	ctx, cancel := s.opContext(ctx)
	defer cancel()
	var out []store.Object
	err := s.retry(ctx, func() error {
		var err error
		// A compaction between two pages removes the revision the listing
		// is pinned to; the listing then starts over at a newer one.
		for attempt := 0; attempt < 3; attempt++ {
			if out, err = s.list(ctx, prefix); !errors.Is(err, rpctypes.ErrCompacted) {
				break
			}
		}
		return err
	})
	if err != nil {
		return nil, s.wrap("list", prefix, err)
	}
	return out, nil
}

func (s *Store) list(ctx context.Context, prefix string) ([]store.Object, error) {
	from := s.base + prefix
	end := clientv3.GetPrefixRangeEnd(from)
	var (
		out []store.Object
		rev int64
	)
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(int64(s.pageSize))}
		if rev > 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := s.cli.Get(ctx, from, opts...)
		if err != nil {
			return nil, err
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			key := strings.TrimPrefix(string(kv.Key), s.base)
			if store.ValidateKey(key) != nil {
				continue
			}
			v, err := decodeValue(kv.Value)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
			out = append(out, store.Object{Key: key, Value: v, Revision: kv.ModRevision})
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return out, nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// withLease runs write with the put options opts ask for: none without a
// TTL, otherwise the key's lease, refreshed (or granted) first. A lease
// that expired between the refresh and the write is granted anew once.
func (s *Store) withLease(ctx context.Context, key string, opts store.PutOptions, write func([]clientv3.OpOption) error) error {
	if opts.TTL <= 0 {
		s.forgetLease(key)
		return write(nil)
	}
	ttl := int64(math.Ceil(opts.TTL.Seconds()))
	for attempt := 0; ; attempt++ {
		id, err := s.lease(ctx, key, ttl)
		if err != nil {
			return err
		}
		err = write([]clientv3.OpOption{clientv3.WithLease(id)})
		if errors.Is(err, rpctypes.ErrLeaseNotFound) && attempt == 0 {
			s.forgetLease(key)
			continue
		}
		return err
	}
}

// lease returns a live lease of ttl seconds for key: the one held, after a
// keep-alive that restarts its countdown, or a new grant. With leasePerPut
// it grants a new lease every time and the old ones expire by themselves.
func (s *Store) lease(ctx context.Context, key string, ttl int64) (clientv3.LeaseID, error) {
	s.mu.Lock()
	held, ok := s.leases[key]
	s.mu.Unlock()
	if ok && held.ttl == ttl && !s.leasePerPut {
		err := s.retry(ctx, func() error {
			_, err := s.cli.KeepAliveOnce(ctx, held.id)
			return err
		})
		if err == nil {
			return held.id, nil
		}
		if !errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return 0, fmt.Errorf("refresh lease: %w", err)
		}
	}
	var grant *clientv3.LeaseGrantResponse
	err := s.retry(ctx, func() (err error) {
		grant, err = s.cli.Grant(ctx, ttl)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("grant lease of %ds: %w", ttl, err)
	}
	s.mu.Lock()
	s.leases[key] = heldLease{id: grant.ID, ttl: ttl}
	s.mu.Unlock()
	return grant.ID, nil
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
// a member gone) with back-off until ctx ends; any other result is final.
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

// transient reports whether err is one a cluster recovers from by itself:
// etcd's Unavailable family (no leader, leader changed, proposal timed out)
// and a connection to a member that went away.
func transient(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		return ee.Code() == codes.Unavailable
	}
	if st, ok := status.FromError(err); ok {
		return st.Code() == codes.Unavailable
	}
	return false
}

// wrap words a failed call as "<verb> <key>: etcd ...: <cause>", explaining
// the causes an operator can act on.
func (s *Store) wrap(verb, key string, err error) error {
	err = scrub(err, s.cfg.Password)
	switch {
	case errors.Is(err, rpctypes.ErrRequestTooLarge), status.Code(err) == codes.ResourceExhausted:
		return fmt.Errorf("%s %s: etcd refused the request as too large (its --max-request-bytes, 1.5 MiB by default, bounds one write even after stado's compression): %w", verb, key, err)
	case errors.Is(err, rpctypes.ErrAuthFailed), errors.Is(err, rpctypes.ErrPermissionDenied), errors.Is(err, rpctypes.ErrUserEmpty):
		return fmt.Errorf("%s %s: etcd %s as user %q: %w", verb, key, strings.Join(s.cfg.Endpoints, ","), s.cfg.Username, err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s %s: etcd %s did not answer in time: %w", verb, key, strings.Join(s.cfg.Endpoints, ","), err)
	}
	return fmt.Errorf("%s %s: etcd: %w", verb, key, err)
}

// scrub makes sure an error never repeats the password.
func scrub(err error, password string) error {
	if err == nil || password == "" || !strings.Contains(err.Error(), password) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), password, "***"))
}
