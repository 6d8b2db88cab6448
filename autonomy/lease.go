package autonomy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/store"
)

// LeaseKey is the store key of the enforcer's lease.
const LeaseKey = store.AutonomyPrefix + "lease"

// DefaultLeaseTTL is how long a lease outlives its holder's last renewal.
const DefaultLeaseTTL = 30 * time.Second

// MinLeaseTTL is the shortest TTL a lease may be taken with (etcd leases
// count whole seconds).
const MinLeaseTTL = 2 * time.Second

// Holder is who holds the lease: the record stored at LeaseKey.
type Holder struct {
	Host       string    `json:"host"`
	PID        int       `json:"pid"`
	Started    time.Time `json:"started"`
	TTLSeconds float64   `json:"ttl_seconds"`
	// Token tells this holder's record from a later one of the same pid.
	Token string `json:"token"`
}

func (h Holder) String() string {
	return fmt.Sprintf("%s pid %d since %s (ttl %.0fs)", h.Host, h.PID, h.Started.UTC().Format(time.RFC3339), h.TTLSeconds)
}

// LeaseHeldError is the refusal of a second enforcer: it names the holder.
type LeaseHeldError struct {
	Holder Holder
}

func (e *LeaseHeldError) Error() string {
	return "another enforcer holds the autonomy lease: " + e.Holder.String()
}

// RefusalCode implements refusal.Coded.
func (e *LeaseHeldError) RefusalCode() refusal.Code { return CodeLeaseHeld }

// Lease is one enforcer's hold on LeaseKey. On etcd the record rides a
// real lease of the TTL that every renewal keeps alive (the store's TTL
// writes); on the file store it is a record with its expiry. Either way a
// holder that dies (SIGKILL included) loses it when the TTL runs out. Its
// methods are safe for concurrent use.
type Lease struct {
	st     store.Store
	holder Holder
	ttl    time.Duration

	mu   sync.Mutex
	rev  int64
	lost error
	stop chan struct{}
	done chan struct{}
}

// NewHolder describes this process as a lease holder.
func NewHolder(now time.Time, ttl time.Duration) Holder {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	return Holder{Host: host, PID: os.Getpid(), Started: now.UTC(), TTLSeconds: ttl.Seconds(), Token: hex.EncodeToString(b[:])}
}

// Acquire takes the lease for h with h's TTL, or refuses with a
// *LeaseHeldError naming the current holder. Once taken, the lease is
// renewed every third of its TTL until Release; a renewal that finds the
// lease gone or taken calls lost (if not nil) once, with the cause, and
// renews no more. Other errors are the store's.
func Acquire(ctx context.Context, st store.Store, h Holder, lost func(error)) (*Lease, error) {
	ttl := time.Duration(h.TTLSeconds * float64(time.Second))
	if ttl < MinLeaseTTL {
		return nil, refusal.New(refusal.Usage, "a lease TTL of %s is shorter than %s", ttl, MinLeaseTTL)
	}
	value, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	rev, err := st.CompareAndSwap(ctx, LeaseKey, value, 0, store.PutOptions{TTL: ttl})
	if errors.Is(err, store.ErrConflict) {
		cur, rerr := CurrentHolder(ctx, st)
		if rerr == nil && cur != nil {
			return nil, &LeaseHeldError{Holder: *cur}
		}
		return nil, fmt.Errorf("take the autonomy lease: %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("take the autonomy lease: %w", err)
	}
	l := &Lease{st: st, holder: h, ttl: ttl, rev: rev, stop: make(chan struct{}), done: make(chan struct{})}
	go l.keepAlive(lost)
	return l, nil
}

// Holder is the record this lease was taken with.
func (l *Lease) Holder() Holder { return l.holder }

func (l *Lease) keepAlive(lost func(error)) {
	defer close(l.done)
	t := time.NewTicker(l.ttl / 3)
	defer t.Stop()
	value, _ := json.Marshal(l.holder)
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), l.ttl/3)
		l.mu.Lock()
		rev, err := l.st.CompareAndSwap(ctx, LeaseKey, value, l.rev, store.PutOptions{TTL: l.ttl})
		if err == nil {
			l.rev = rev
		} else if errors.Is(err, store.ErrConflict) {
			l.lost = fmt.Errorf("the autonomy lease was lost: %w", err)
		}
		lostErr := l.lost
		l.mu.Unlock()
		cancel()
		if lostErr != nil {
			if lost != nil {
				lost(lostErr)
			}
			return
		}
		// A transient store error is retried at the next tick; the TTL
		// leaves two more before the lease could expire.
	}
}

// Lost is the cause when the lease was found gone or taken; nil while held.
func (l *Lease) Lost() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost
}

// Release stops the renewals and removes the record when it is still this
// holder's. Releasing twice is harmless.
func (l *Lease) Release(ctx context.Context) error {
	select {
	case <-l.stop:
		return nil
	default:
		close(l.stop)
	}
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost != nil {
		return nil
	}
	cur, err := l.st.Get(ctx, LeaseKey)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("release the autonomy lease: %w", err)
	}
	if cur.Revision != l.rev {
		return nil // someone else's by now
	}
	if err := l.st.Delete(ctx, LeaseKey); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("release the autonomy lease: %w", err)
	}
	return nil
}

// CurrentHolder reads the lease record: nil when no enforcer holds it.
func CurrentHolder(ctx context.Context, st store.Store) (*Holder, error) {
	obj, err := st.Get(ctx, LeaseKey)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the autonomy lease: %w", err)
	}
	var h Holder
	if err := json.Unmarshal(obj.Value, &h); err != nil {
		return nil, fmt.Errorf("read the autonomy lease: %s holds no lease record: %w", LeaseKey, err)
	}
	return &h, nil
}
