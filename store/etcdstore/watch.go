package etcdstore

import (
	"context"
	"time"
)

// maxWatchMessage bounds one message of a watch stream (its events carry
// the values written). A longer one ends the stream like a lost member:
// a notice is sent and the watch is opened again.
const maxWatchMessage = 16 << 20

// Watch says when a key under prefix (a store key prefix, "" for every key
// of the store) changes: the returned channel receives once per batch of
// changes (a receiver that is behind gets one notice for many) and is
// closed when ctx ends. A watch that ends otherwise (the cluster cancels
// it on a compaction or a lost leader, the member goes away) is opened
// again after a second, on the next member if that one does not answer,
// and a notice is sent then, since changes may have been missed meanwhile.
func (s *Store) Watch(ctx context.Context, prefix string) (<-chan struct{}, error) {
	out := make(chan struct{}, 1)
	notify := func() {
		select {
		case out <- struct{}{}:
		default:
		}
	}
	key := []byte(s.base + prefix)
	req := watchRequest{CreateRequest: watchCreateRequest{Key: key, RangeEnd: prefixEnd(key)}}
	go func() {
		defer close(out)
		reauthed := false
		for first := true; ctx.Err() == nil; first = false {
			if !first {
				notify()
			}
			token := s.c.currentToken()
			created, refused := s.watchOnce(ctx, req, notify)
			if created {
				reauthed = false
			}
			// etcd refuses a watch whose token it no longer knows as a
			// permission it lacks: authenticate again, once per run of
			// refusals (a user without the permission is refused anyway).
			if refused && s.c.user != "" && !reauthed {
				reauthed = true
				_, _ = s.c.authenticate(ctx, token)
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	return out, nil
}

// watchOnce runs one watch stream until it ends, calling notify for each
// message that carries events. It says whether the watch was created, and
// whether etcd refused it at once.
func (s *Store) watchOnce(ctx context.Context, req watchRequest, notify func()) (created, refused bool) {
	body, err := s.c.stream(ctx, "/v3/watch", req)
	if err != nil {
		return false, false
	}
	defer body.Close()
	dec := newStreamDecoder(body, maxWatchMessage)
	for {
		var msg struct {
			Result *watchResponse `json:"result"`
			Error  *streamError   `json:"error"`
		}
		if err := dec.Decode(&msg); err != nil || msg.Error != nil || msg.Result == nil {
			return created, false
		}
		if msg.Result.Canceled {
			return created, !created && msg.Result.Created
		}
		if msg.Result.Created {
			created = true
		}
		if len(msg.Result.Events) > 0 {
			notify()
		}
	}
}
