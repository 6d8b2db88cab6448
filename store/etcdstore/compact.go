package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
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
	_ = s.c.call(cctx, "/v3/kv/compaction", compactionRequest{Revision: rev - retain}, &struct{}{}, smallBody)
}

// probe asks the cluster one cheap question (a count of one key), giving
// each member the dial timeout to answer, so an endpoint that does not
// answer fails at open, naming it, instead of at the first call after the
// request timeout. With a user it authenticates first.
func (s *Store) probe(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, s.cfg.DialTimeout*time.Duration(len(s.cfg.Endpoints)))
	defer cancel()
	var resp rangeResponse
	err := s.retry(pctx, func() error {
		return s.c.call(pctx, "/v3/kv/range", rangeRequest{Key: []byte(s.base + "registry"), CountOnly: true}, &resp, smallBody)
	})
	if err == nil {
		return nil
	}
	var me *memberError
	if (pctx.Err() != nil || errors.As(err, &me)) && ctx.Err() == nil {
		return fmt.Errorf("open etcd store %s: no member of %s answered within %v (dial_timeout): %w (last: %v)",
			s.cfg, strings.Join(s.cfg.Endpoints, ","), s.cfg.DialTimeout, context.DeadlineExceeded, scrub(err, s.cfg.Password))
	}
	return fmt.Errorf("open etcd store %s: %w", s.cfg, scrub(err, s.cfg.Password))
}
