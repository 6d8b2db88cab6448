package beacon

import (
	"context"
	"errors"
	"testing"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/store"
)

// The read commands' queries decide what a filter selects and what is
// refused; the CLI only prints their results.
func TestListSelectsAndRefuses(t *testing.T) {
	st := seeded(t)
	ctx := context.Background()
	r := Reading{Now: t0}
	cases := []struct {
		name string // why the case exists
		q    ListQuery
		rows int
		code refusal.Code // "" when answered
	}{
		{"every declared row", ListQuery{}, 4, ""},
		{"one host's rows", ListQuery{Host: "host1"}, 2, ""},
		{"a service by its unit on every host declaring it", ListQuery{Service: "web.service"}, 3, ""},
		{"problems: failing and unknown rows only", ListQuery{Problems: true}, 3, ""},
		{"undeclared units of fresh hosts", ListQuery{Undeclared: true}, 1, ""},
		{"a host nothing knows", ListQuery{Host: "nowhere"}, 0, refusal.NotFound},
		{"a service nobody declares", ListQuery{Service: "nothing"}, 0, refusal.NotFound},
	}
	for _, c := range cases {
		c.q.Reading = r
		res, err := List(ctx, st, c.q)
		if c.code != "" {
			if !refusal.Is(err, c.code) {
				t.Errorf("%s: %v, want %s", c.name, err, c.code)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
		} else if len(res.Services) != c.rows {
			t.Errorf("%s: %d row(s), want %d", c.name, len(res.Services), c.rows)
		}
	}
}

func TestStatusFindsDeclarationsAndRefusesTheUnknown(t *testing.T) {
	st := seeded(t)
	ctx := context.Background()
	res, err := Status(ctx, st, StatusQuery{Reading: Reading{Now: t0}, Name: "old"})
	if err != nil || len(res.Hosts) != 1 || res.Hosts[0].Host != "host1" || res.Hosts[0].Source != "registry" {
		t.Fatalf("status old: %+v, %v", res, err)
	}
	if want := "stado service logs old --host host1 --lines 100"; res.Hosts[0].LogsHint != want {
		t.Errorf("logs hint %q, want %q", res.Hosts[0].LogsHint, want)
	}
	if _, err := Status(ctx, st, StatusQuery{Reading: Reading{Now: t0}, Name: "nothing"}); !refusal.Is(err, refusal.NotFound) {
		t.Errorf("status of nothing: %v, want not_found", err)
	}
}

func TestQueriesRefuseAStoreWithoutARegistry(t *testing.T) {
	st := newStore(t)
	ctx := context.Background()
	r := Reading{Now: t0, Store: "file:///x"}
	_, lerr := List(ctx, st, ListQuery{Reading: r})
	_, herr := HealthOf(ctx, st, r, "")
	_, derr := DoctorOf(ctx, st, r)
	for _, err := range []error{lerr, herr, derr} {
		if !refusal.Is(err, refusal.NotFound) || !errors.Is(err, store.ErrNotFound) || err.Error() != "store file:///x holds no registry" {
			t.Errorf("empty store: %v, want the not_found refusal naming the store", err)
		}
	}
}
