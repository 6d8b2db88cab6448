package etcdstore

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Watch says when a key under prefix (a store key prefix, "" for every key
// of the store) changes: the returned channel receives once per batch of
// changes (a receiver that is behind gets one notice for many) and is
// closed when ctx ends. A watch the cluster cancels (a compaction, a lost
// member) is opened again after a second, and a notice is sent then, since
// changes may have been missed meanwhile.
func (s *Store) Watch(ctx context.Context, prefix string) (<-chan struct{}, error) {
	out := make(chan struct{}, 1)
	notify := func() {
		select {
		case out <- struct{}{}:
		default:
		}
	}
	go func() {
		defer close(out)
		for first := true; ctx.Err() == nil; first = false {
			if !first {
				notify()
			}
			wctx := clientv3.WithRequireLeader(ctx)
			for resp := range s.cli.Watch(wctx, s.base+prefix, clientv3.WithPrefix()) {
				if resp.Err() != nil || resp.Canceled {
					break
				}
				if len(resp.Events) > 0 {
					notify()
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	return out, nil
}
