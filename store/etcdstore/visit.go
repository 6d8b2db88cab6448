package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wisent/stado/store"
)

// visitPage is how many keys one request of Visit reads: small enough
// that the objects of one page are handed on while the next is read.
const visitPage = 100

// Visit hands every object under prefix to fn, on up to workers
// goroutines, while the next page is read: a thousand beacons are decoded
// as they arrive instead of after ten megabytes are held. Every page is read
// at the revision of the first, so the objects are one snapshot. A failed
// page is retried as List retries; a compaction of that revision midway
// ends the visit with an error (List would start over, but objects were
// already handed on).
func (s *Store) Visit(ctx context.Context, prefix string, workers int, fn func(obj store.Object)) error {
	return s.VisitBounded(ctx, prefix, workers, 0, fn, nil)
}

// VisitBounded is Visit handing an object whose value is over limit bytes
// (limit > 0) to tooLarge instead of fn; a compressed value is expanded no
// further than limit.
func (s *Store) VisitBounded(ctx context.Context, prefix string, workers int, limit int64, fn func(obj store.Object), tooLarge func(*store.TooLargeError)) error {
	if strings.ContainsRune(prefix, 0) || strings.Contains(prefix, "..") || len(prefix) > store.MaxKeyLength {
		return fmt.Errorf("prefix %q: %w", prefix, store.ErrInvalidKey)
	}
	ctx, cancel := s.opContext(ctx)
	defer cancel()
	var (
		mu    sync.Mutex
		first error
	)
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
		cancel()
	}
	kvs := make(chan *mvccpb.KeyValue, visitPage)
	var wg sync.WaitGroup
	for w := 0; w < max(1, workers); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for kv := range kvs {
				key := strings.TrimPrefix(string(kv.Key), s.base)
				if store.ValidateKey(key) != nil {
					continue
				}
				v, err := decodeValueMax(kv.Value, int(limit))
				if errors.Is(err, errOverBound) {
					tooLarge(&store.TooLargeError{Key: key, Size: limit + 1, Max: limit})
					continue
				}
				if err != nil {
					fail(fmt.Errorf("%s: %w", key, err))
					continue
				}
				fn(store.Object{Key: key, Value: v, Revision: kv.ModRevision})
			}
		}()
	}
	from := s.base + prefix
	end := clientv3.GetPrefixRangeEnd(from)
	var rev int64
	for ctx.Err() == nil {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(visitPage)}
		if rev > 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		var resp *clientv3.GetResponse
		err := s.retry(ctx, func() error {
			var err error
			resp, err = s.cli.Get(ctx, from, opts...)
			return err
		})
		if err != nil {
			fail(err)
			break
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			kvs <- kv
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	close(kvs)
	wg.Wait()
	if first == nil {
		first = ctx.Err() // the caller's context ended: the visit is not whole
	}
	if first != nil {
		return s.wrap("list", prefix, first)
	}
	return nil
}
