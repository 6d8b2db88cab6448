package autonomy

import (
	"context"

	"github.com/wisent/stado/store"
)

// Status is what `optimize status` reports: the enforcer holding the
// store's lease, the newest cycle in full and, when asked, the newest
// cycles' summaries.
type Status struct {
	// Lease is the enforcer holding the store's lease; null when none.
	Lease *Holder `json:"lease"`
	// Latest is the newest cycle in full; null before the first.
	Latest  *Cycle  `json:"latest"`
	History []Cycle `json:"history,omitempty"`
}

// ReadStatus reads the lease's holder and the latest cycle from st, with
// the history newest cycles' summaries when history > 0 (the rows and
// alerts only in Latest).
func ReadStatus(ctx context.Context, st store.Store, history int) (*Status, error) {
	s := &Status{}
	var err error
	if s.Lease, err = CurrentHolder(ctx, st); err != nil {
		return nil, err
	}
	cs, err := History(ctx, st, max(history, 1))
	if err != nil {
		return nil, err
	}
	if len(cs) > 0 {
		latest := cs[0]
		s.Latest = &latest
	}
	if history > 0 {
		s.History = make([]Cycle, len(cs))
		for i, c := range cs {
			c.Rows, c.Alerts = nil, nil // the summary only; Latest carries the rows
			s.History[i] = c
		}
	}
	return s, nil
}
