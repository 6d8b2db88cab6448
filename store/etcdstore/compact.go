package etcdstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// etcd keeps every version of every key until the key space is compacted.
// Beacons rewrite one key per host every pass, so a fleet grows the
// history by millions of revisions a day; stado bounds it itself.
const (
	// DefaultCompactRetain is how many revisions behind the newest one
	// stado compacts to (URL option compact_retain; 0 turns it off and
	// leaves compaction to etcd's --auto-compaction-retention).
	DefaultCompactRetain = 10_000
	// CompactEvery: the writer whose write lands on a multiple of it
	// compacts, so a cluster is compacted once per this many revisions
	// whoever writes.
	CompactEvery = 1_000
)

// maybeCompact compacts the key space to rev-retain when rev is a multiple
// of CompactEvery. A compaction that fails (another writer compacted
// further, or a member is down) is left to the next one: stado's reads
// never need an old revision (List retries a compacted read).
func (s *Store) maybeCompact(ctx context.Context, rev int64) {
	retain := s.cfg.CompactRetain
	if retain <= 0 || rev%CompactEvery != 0 || rev <= retain {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_, _ = s.cli.Compact(cctx, rev-retain)
}

// probe asks the cluster one cheap question within the dial timeout, so an
// endpoint that does not answer fails at open, naming it, instead of at
// the first call after the request timeout.
func (s *Store) probe(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, s.cfg.DialTimeout)
	defer cancel()
	_, err := s.cli.Get(pctx, s.base+"registry", clientv3.WithCountOnly())
	if err == nil {
		return nil
	}
	if pctx.Err() != nil && ctx.Err() == nil {
		return fmt.Errorf("open etcd store %s: no member of %s answered within %v (dial_timeout): %w",
			s.cfg, strings.Join(s.cfg.Endpoints, ","), s.cfg.DialTimeout, context.DeadlineExceeded)
	}
	return fmt.Errorf("open etcd store %s: %w", s.cfg, scrub(err, s.cfg.Password))
}
