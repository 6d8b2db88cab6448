package beacon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/store"
)

// NotReading is a host whose beacon does not say its stado reads an
// encoding: an older host process, or a beacon that could not be read.
type NotReading struct {
	Host         string `json:"host"`
	StadoVersion string `json:"stado_version,omitempty"`
	// Cause says why a beacon could not be read; empty when it was read
	// and simply does not name the encoding.
	Cause string `json:"cause,omitempty"`
}

// HostsNotReading reads every beacon in st and returns how many there
// are and, sorted by host, those that do not name encoding in their
// store_reads. It reads only the fields it needs, each beacon bounded by
// MaxBytes.
func HostsNotReading(ctx context.Context, st store.Store, encoding string) (int, []NotReading, error) {
	var (
		mu    sync.Mutex
		hosts int
		out   []NotReading
	)
	add := func(n *NotReading) {
		mu.Lock()
		defer mu.Unlock()
		hosts++
		if n != nil {
			out = append(out, *n)
		}
	}
	visit := func(obj store.Object) {
		host := strings.TrimPrefix(obj.Key, store.BeaconPrefix)
		var b struct {
			Kind         string   `json:"kind"`
			StadoVersion string   `json:"stado_version"`
			StoreReads   []string `json:"store_reads"`
		}
		switch err := json.Unmarshal(obj.Value, &b); {
		case err != nil:
			add(&NotReading{Host: host, Cause: err.Error()})
		case b.Kind != Kind:
			add(&NotReading{Host: host, Cause: fmt.Sprintf("kind %q, want %q", b.Kind, Kind)})
		case !slices.Contains(b.StoreReads, encoding):
			add(&NotReading{Host: host, StadoVersion: b.StadoVersion})
		default:
			add(nil)
		}
	}
	tooLarge := func(e *store.TooLargeError) {
		add(&NotReading{Host: strings.TrimPrefix(e.Key, store.BeaconPrefix), Cause: e.Error()})
	}
	var err error
	if b, ok := st.(store.BoundedReader); ok {
		err = b.VisitBounded(ctx, store.BeaconPrefix, 4, MaxBytes, visit, tooLarge)
	} else {
		err = store.Visit(ctx, st, store.BeaconPrefix, 4, visit)
	}
	if err != nil {
		return 0, nil, fmt.Errorf("read beacons: %w", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Host < out[j].Host })
	return hosts, out, nil
}

// Packing is what `stado store packing` reports: whether the store packs
// values, and the hosts that would fail to read packed ones.
type Packing struct {
	Packed bool `json:"packed"`
	// Changed says whether this call wrote the packing document.
	Changed bool `json:"changed"`
	// Hosts counts the beacons read; NotReading lists those whose host
	// does not read packed values.
	Hosts      int          `json:"hosts"`
	NotReading []NotReading `json:"not_reading"`
}

// ErrCannotPack: the store keeps every value as written (a file store).
var ErrCannotPack = errors.New("this store keeps every value as written (a file store): packing is for an etcd store")

// ErrHostsNotReading refuses to turn packing on while some beacon's
// host does not read packed values.
var ErrHostsNotReading = errors.New("hosts would not read packed values")

// SetPacking reads the store's packing state and every beacon's
// store_reads and, when want is not nil, writes the packing document
// saying *want. Turning packing on is refused, with nothing written, while
// a beacon's host does not read packed values, unless force. by names the
// writer in the document.
func SetPacking(ctx context.Context, st store.Store, want *bool, force bool, by string, now time.Time) (Packing, error) {
	packer, ok := st.(store.Packer)
	if !ok {
		return Packing{}, ErrCannotPack
	}
	packed, err := packer.PacksValues(ctx)
	if err != nil {
		return Packing{}, fmt.Errorf("read %s: %w", store.PackingKey, err)
	}
	res := Packing{Packed: packed}
	if res.Hosts, res.NotReading, err = HostsNotReading(ctx, st, store.PackedEncoding); err != nil {
		return res, err
	}
	if res.NotReading == nil {
		res.NotReading = []NotReading{}
	}
	if want == nil || *want == packed {
		return res, nil
	}
	if *want && len(res.NotReading) > 0 && !force {
		return res, &refusal.Error{Code: refusal.PackingUnread, Err: ErrHostsNotReading, Details: res,
			Message: fmt.Sprintf("packing stays off: %d of %d hosts would not read packed values (first: %s)", len(res.NotReading), res.Hosts, res.NotReading[0]),
			Hint:    "upgrade their stado (the beacon's store_reads names \"" + store.PackedEncoding + "\"), or --force when no older stado reads this store"}
	}
	doc, err := json.Marshal(store.Packing{Kind: store.PackingKind, Packed: *want, At: now.UTC(), By: by})
	if err != nil {
		return res, err
	}
	if _, err := st.Put(ctx, store.PackingKey, doc, store.PutOptions{}); err != nil {
		return res, fmt.Errorf("write %s: %w", store.PackingKey, err)
	}
	if res.Packed, err = packer.PacksValues(ctx); err != nil {
		return res, fmt.Errorf("read %s back: %w", store.PackingKey, err)
	}
	res.Changed = true
	return res, nil
}

// Lines is the text form of p.
func (p Packing) Lines() []string {
	state := "off"
	if p.Packed {
		state = "on"
	}
	verb := "is"
	if p.Changed {
		verb = "turned"
	}
	out := []string{fmt.Sprintf("packing %s %s; %d of %d beacons' hosts read packed values", verb, state, p.Hosts-len(p.NotReading), p.Hosts)}
	for _, n := range p.NotReading {
		out = append(out, "  "+n.String())
	}
	return out
}

// String says why n's host would not read packed values.
func (n NotReading) String() string {
	if n.Cause != "" {
		return fmt.Sprintf("%s: beacon unreadable: %s", n.Host, n.Cause)
	}
	return fmt.Sprintf("%s: stado %s does not read packed values", n.Host, n.StadoVersion)
}
