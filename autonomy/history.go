package autonomy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

// CyclePrefix is where cycles are kept, one object each, keyed by their
// start so a listing runs oldest first.
const CyclePrefix = store.AutonomyPrefix + "cycles/"

// HistoryLimit is how many cycles the store keeps; saving one more removes
// the oldest.
const HistoryLimit = 100

// CycleKind marks a stored cycle.
const CycleKind = "stado.autonomy.cycle"

// Cycle is one run of the autonomy cycle as the store keeps it: its mode,
// when it ran, the registry revision it planned from, every plan row with
// its evidence and, in enforce mode, the caps, the lease holder and each
// action's result.
type Cycle struct {
	Kind             string    `json:"kind,omitempty"` // set in the stored record
	ID               string    `json:"id"`
	Mode             string    `json:"mode"`
	Start            time.Time `json:"start"`
	End              time.Time `json:"end"`
	RegistryRevision int64     `json:"registry_revision"`
	// Caps and Holder are set in enforce mode.
	Caps   *Caps   `json:"caps,omitempty"`
	Holder *Holder `json:"holder,omitempty"`
	Rows   []Row   `json:"rows"`
	// Counts counts rows by action and refusal code; Summary says them.
	Counts  map[string]int `json:"counts"`
	Summary string         `json:"summary"`
	// Stopped says why an enforcing cycle stopped early ("" when it ran
	// every action).
	Stopped string `json:"stopped,omitempty"`
	// Failed counts the actions that failed (enforce mode).
	Failed int `json:"failed,omitempty"`
	// Alerts are the deliveries of this cycle's refusals and failures.
	Alerts []AlertRecord `json:"alerts,omitempty"`
	// Error is a failure of the cycle itself (the store, the registry).
	Error string `json:"error,omitempty"`
	// Phases says where the cycle's time went.
	Phases Phases `json:"phases"`
}

// Phases are a cycle's durations in milliseconds: reading the store (the
// registry, every beacon, the catalog), the sweep of the hosts, planning
// from both, and acting on the plan (enforce mode only). Read plus Plan is
// what the cycle costs the workstation before any host answers.
type Phases struct {
	Read    float64 `json:"read_ms"`
	Sweep   float64 `json:"sweep_ms"`
	Plan    float64 `json:"plan_ms"`
	Enforce float64 `json:"enforce_ms,omitempty"`
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Refusals are the rows refused.
func (c *Cycle) Refusals() []Row {
	var out []Row
	for _, r := range c.Rows {
		if r.Refusal != nil {
			out = append(out, r)
		}
	}
	return out
}

// Actions are the rows an enforcing cycle acted on.
func (c *Cycle) Actions() []Row {
	var out []Row
	for _, r := range c.Rows {
		if r.Result != nil {
			out = append(out, r)
		}
	}
	return out
}

func cycleKey(start time.Time) string {
	return fmt.Sprintf("%s%020d", CyclePrefix, start.UnixNano())
}

// Save stores c under its start and removes the oldest cycles beyond
// limit (HistoryLimit when limit <= 0). The cycle is written before any is
// removed; a failed removal is returned but leaves c stored.
func Save(ctx context.Context, st store.Store, c *Cycle, limit int) error {
	if limit <= 0 {
		limit = HistoryLimit
	}
	if c.ID == "" {
		c.ID = strings.TrimPrefix(cycleKey(c.Start), CyclePrefix)
	}
	// The stored record names its kind; c itself is left without one, so a
	// printer that puts the kind first does not write it twice.
	stored := *c
	stored.Kind = CycleKind
	b, err := json.Marshal(&stored)
	if err != nil {
		return fmt.Errorf("record the cycle: %w", err)
	}
	if _, err := st.Put(ctx, CyclePrefix+c.ID, b, store.PutOptions{}); err != nil {
		return fmt.Errorf("record the cycle: %w", err)
	}
	keys, err := store.Keys(ctx, st, CyclePrefix)
	if err != nil {
		return fmt.Errorf("list the cycle history: %w", err)
	}
	for len(keys) > limit {
		if err := st.Delete(ctx, keys[0]); err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("trim the cycle history: %w", err)
		}
		keys = keys[1:]
	}
	return nil
}

// History returns the newest n cycles (every one when n <= 0), newest
// first. A record that does not decode is returned as a cycle carrying
// only its ID and the decode error. An empty history is no error.
func History(ctx context.Context, st store.Store, n int) ([]Cycle, error) {
	objs, err := st.List(ctx, CyclePrefix)
	if err != nil {
		return nil, fmt.Errorf("read the cycle history: %w", err)
	}
	var out []Cycle
	for i := len(objs) - 1; i >= 0 && (n <= 0 || len(out) < n); i-- {
		var c Cycle
		if err := json.Unmarshal(objs[i].Value, &c); err != nil || c.Kind != CycleKind {
			if err == nil {
				err = fmt.Errorf("kind %q is not %s", c.Kind, CycleKind)
			}
			c = Cycle{ID: strings.TrimPrefix(objs[i].Key, CyclePrefix), Error: "unreadable cycle record: " + err.Error()}
		}
		out = append(out, c)
	}
	return out, nil
}

// Outcome is a cycle's verdict for its exit: an error when an enforcing
// cycle had an action fail or left one not attempted; nil otherwise (a
// report cycle changes nothing, so it never fails this way).
func (c *Cycle) Outcome() error {
	if c.Mode != registry.AutonomyEnforce {
		return nil
	}
	notAttempted := c.Counts[string(CodeNotAttempted)]
	if c.Failed == 0 && notAttempted == 0 {
		return nil
	}
	return fmt.Errorf("autonomy cycle %s: %d action(s) failed, %d not attempted", c.ID, c.Failed, notAttempted)
}
