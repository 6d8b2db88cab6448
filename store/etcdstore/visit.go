package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

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
// further than limit. A page is read no further than a page of values at
// the limit takes; a longer page is read again key by key, each bounded.
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
	kvs := make(chan keyValue, visitPage)
	var wg sync.WaitGroup
	for w := 0; w < max(1, workers); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for kv := range kvs {
				if kv.skip {
					continue
				}
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
	from := []byte(s.base + prefix)
	end := prefixEnd(from)
	var bound int64
	if limit > 0 {
		bound = s.valueBody(visitPage, limit)
	}
	var rev int64
	for ctx.Err() == nil {
		req := rangeRequest{Key: from, RangeEnd: end, Limit: visitPage, Revision: rev}
		var resp rangeResponse
		err := s.retry(ctx, func() error {
			return s.c.call(ctx, "/v3/kv/range", req, &resp, bound)
		})
		var tl *bodyTooLargeError
		if errors.As(err, &tl) && limit > 0 {
			resp, err = s.pageKeyByKey(ctx, req, limit, tooLarge)
		}
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
		from = append(resp.Kvs[len(resp.Kvs)-1].Key, 0)
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

// pageKeyByKey reads the page req asks for when it was longer than a page
// of values at limit: its keys first, then each key alone at the page's
// revision, bounded. A key whose value is over limit goes to tooLarge and
// stays in the page without its value (so the next page starts after it);
// the workers skip it.
func (s *Store) pageKeyByKey(ctx context.Context, req rangeRequest, limit int64, tooLarge func(*store.TooLargeError)) (rangeResponse, error) {
	keys := req
	keys.KeysOnly = true
	var page rangeResponse
	err := s.retry(ctx, func() error {
		return s.c.call(ctx, "/v3/kv/range", keys, &page, int64(visitPage)*(int64(len(s.base)+store.MaxKeyLength)*2+512)+1024)
	})
	if err != nil {
		return page, err
	}
	rev := req.Revision
	if rev == 0 {
		rev = page.Header.Revision
	}
	for i, kv := range page.Kvs {
		var one rangeResponse
		err := s.retry(ctx, func() error {
			return s.c.call(ctx, "/v3/kv/range", rangeRequest{Key: kv.Key, Revision: rev}, &one, s.valueBody(1, limit))
		})
		var tl *bodyTooLargeError
		switch {
		case errors.As(err, &tl):
			if key := strings.TrimPrefix(string(kv.Key), s.base); store.ValidateKey(key) == nil {
				tooLarge(&store.TooLargeError{Key: key, Size: limit + 1, Max: limit})
			}
			page.Kvs[i].skip = true
		case err != nil:
			return page, err
		case len(one.Kvs) == 1:
			page.Kvs[i] = one.Kvs[0]
		}
	}
	return page, nil
}
