package metrics

import (
	"context"
	"errors"
	"time"

	"github.com/wisent/stado/store"
)

// Instrument returns st with every operation timed into
// stado_store_operation_duration_seconds and every failure counted into
// stado_store_operation_failures_total. The returned store is a
// store.BoundedReader, a store.RevisionReader, a store.KeyLister and a
// store.Visitor whatever st is, answering as st would through
// store.GetBounded, store.Revision, store.Keys and store.Visit, so a reader that asks for those keeps st's behaviour;
// Purge is store.Forget on st.
// Close closes st. It is safe for concurrent use when st is.
func (m *Host) Instrument(st store.Store) store.Store {
	return &timedStore{inner: st, m: m}
}

// timedStore is the instrumenting decorator of a store.
type timedStore struct {
	inner store.Store
	m     *Host
}

var (
	_ store.Store          = (*timedStore)(nil)
	_ store.BoundedReader  = (*timedStore)(nil)
	_ store.RevisionReader = (*timedStore)(nil)
	_ store.KeyLister      = (*timedStore)(nil)
	_ store.Visitor        = (*timedStore)(nil)
	_ store.Purger         = (*timedStore)(nil)
)

// observe records one operation that started at start and ended with err.
func (s *timedStore) observe(op string, start time.Time, err error) {
	s.m.storeDuration.observe(s.m.clock().Sub(start).Seconds(), op)
	if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrConflict) {
		s.m.storeFailures.add(1, op)
	}
}

func (s *timedStore) Get(ctx context.Context, key string) (store.Object, error) {
	start := s.m.clock()
	o, err := s.inner.Get(ctx, key)
	s.observe("get", start, err)
	return o, err
}

func (s *timedStore) CompareAndSwap(ctx context.Context, key string, value []byte, expect int64, opts store.PutOptions) (int64, error) {
	start := s.m.clock()
	rev, err := s.inner.CompareAndSwap(ctx, key, value, expect, opts)
	s.observe("cas", start, err)
	return rev, err
}

func (s *timedStore) Put(ctx context.Context, key string, value []byte, opts store.PutOptions) (int64, error) {
	start := s.m.clock()
	rev, err := s.inner.Put(ctx, key, value, opts)
	s.observe("put", start, err)
	return rev, err
}

func (s *timedStore) List(ctx context.Context, prefix string) ([]store.Object, error) {
	start := s.m.clock()
	objs, err := s.inner.List(ctx, prefix)
	s.observe("list", start, err)
	return objs, err
}

func (s *timedStore) Delete(ctx context.Context, key string) error {
	start := s.m.clock()
	err := s.inner.Delete(ctx, key)
	s.observe("delete", start, err)
	return err
}

// Close closes the decorated store; it is not timed.
func (s *timedStore) Close() error { return s.inner.Close() }

// GetBounded is timed as a get.
func (s *timedStore) GetBounded(ctx context.Context, key string, max int64) (store.Object, error) {
	start := s.m.clock()
	o, err := store.GetBounded(ctx, s.inner, key, max)
	s.observe("get", start, err)
	return o, err
}

// Revision is timed as a get.
func (s *timedStore) Revision(ctx context.Context, key string) (int64, error) {
	start := s.m.clock()
	rev, err := store.Revision(ctx, s.inner, key)
	s.observe("get", start, err)
	return rev, err
}

// Keys is timed as a list.
func (s *timedStore) Keys(ctx context.Context, prefix string) ([]string, error) {
	start := s.m.clock()
	keys, err := store.Keys(ctx, s.inner, prefix)
	s.observe("list", start, err)
	return keys, err
}

// Visit is timed as a visit, the callbacks' work included.
func (s *timedStore) Visit(ctx context.Context, prefix string, workers int, fn func(store.Object)) error {
	start := s.m.clock()
	err := store.Visit(ctx, s.inner, prefix, workers, fn)
	s.observe("visit", start, err)
	return err
}

// VisitBounded is timed as a visit, the callbacks' work included.
func (s *timedStore) VisitBounded(ctx context.Context, prefix string, workers int, max int64, fn func(store.Object), tooLarge func(*store.TooLargeError)) error {
	start := s.m.clock()
	err := store.VisitBounded(ctx, s.inner, prefix, workers, max, fn, tooLarge)
	s.observe("visit", start, err)
	return err
}

// Purge is timed as a delete.
func (s *timedStore) Purge(ctx context.Context, key string) error {
	start := s.m.clock()
	err := store.Forget(ctx, s.inner, key)
	s.observe("delete", start, err)
	return err
}
