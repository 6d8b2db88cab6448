package cli

import (
	"cmp"
	"context"
	"slices"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/register"
	"github.com/wisent/stado/store"
	"github.com/wisent/stado/store/etcdstore"
)

func serviceReadCommands(env *Env) []*ucli.Command {
	return []*ucli.Command{
		newServiceListCommand(env),
		newServiceStatusCommand(env),
		newServiceRecoveriesCommand(env),
	}
}

func staleFlag() ucli.Flag {
	return &ucli.DurationFlag{Name: "stale-after", Usage: "distrust beacons older than this", DefaultText: "each beacon's own bound, 3 × its interval"}
}

// reading is how the read commands read: at env's clock, with the user's
// validated-registry cache, distrusting beacons older than stale.
func reading(env *Env, stale time.Duration) beacon.Reading {
	return beacon.Reading{Now: env.Now(), StaleAfter: stale, Cache: beacon.UserRegistryCache(env.Getenv, env.StoreURL), Store: etcdstore.Redact(env.StoreURL)}
}

// readStore opens the store the globals name and runs query on it.
func readStore[T any](ctx context.Context, env *Env, query func(store.Store) (T, error)) (T, error) {
	st, err := openStore(ctx, env)
	if err != nil {
		var zero T
		return zero, err
	}
	defer st.Close()
	return query(st)
}

func newServiceListCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "list",
		Usage: "list declared services joined with the latest host beacons (no SSH)",
		UsageText: "stado service list [--host HOST] [--service NAME] [--problems] [--undeclared] [--stale-after DURATION] [--json]\n\n" +
			"A host whose beacon is older than its staleness bound reads unknown, never active.\n" +
			"The filters are applied before the beacons are read: a host they leave out is not decoded.\n\n" +
			"example:\n   stado service list --host host2 --json\n   stado service list --service brama --problems",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "host", Usage: "only this host"},
			&ucli.StringFlag{Name: "service", Usage: "only this service: its declared name, its unit, or a catalog product's name or unit"},
			&ucli.BoolFlag{Name: "problems", Usage: "only rows that need attention: any state but active (unknown included), an incomplete declaration, an answering question that stood or was answered unsuccessfully"},
			&ucli.BoolFlag{Name: "undeclared", Usage: "list loaded units that no declaration covers"},
			staleFlag(),
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() > 0 {
				return usagef("service list takes no arguments")
			}
			return runServiceList(c.Context, env, beacon.ListQuery{Reading: beacon.Reading{StaleAfter: c.Duration("stale-after")}, Host: c.String("host"),
				Service: c.String("service"), Problems: c.Bool("problems"), Undeclared: c.Bool("undeclared")})
		},
	}, true)
}

func runServiceList(ctx context.Context, env *Env, q beacon.ListQuery) error {
	q.Reading = reading(env, q.StaleAfter)
	res, err := readStore(ctx, env, func(st store.Store) (*beacon.ListResult, error) { return beacon.List(ctx, st, q) })
	if err != nil {
		return err
	}
	kind := "stado.service.list"
	if q.Undeclared {
		kind = "stado.service.undeclared"
	}
	return emit(env, kind, res, func(t *text) {
		if t.lines(res.Unlisted()); res.Unlisted() == nil {
			t.table(beacon.SourcedTable(res.Services, q.Undeclared))
		}
	})
}

func newServiceStatusCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "status",
		Usage: "show one declared service's verdict from the beacons; --lines also reads its log over SSH",
		UsageText: "stado service status NAME [--host HOST] [--lines N] [--json]\n\n" +
			"Without --lines no connection is opened: the verdict, last exit and last stderr line come from the beacon,\n" +
			"and a recovery the host attempted is shown step by step (exit codes, the restart's pid, alerts).\n\n" +
			"example:\n   stado service status brama --host host2 --json",
		Flags: append([]ucli.Flag{
			&ucli.StringFlag{Name: "host", Usage: "the host (default: every host declaring it)"},
			&ucli.IntFlag{Name: "lines", Usage: "also read this many log lines over the host channel"},
			staleFlag(),
		}, sshFlags()...),
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return usagef("service status takes one NAME")
			}
			logs, done := logsReader(c, env)
			defer done()
			return runServiceStatus(c.Context, env, beacon.StatusQuery{Reading: beacon.Reading{StaleAfter: c.Duration("stale-after")},
				Name: c.Args().First(), Host: c.String("host"), Lines: c.Int("lines"), Logs: logs})
		},
	}, true)
}

func runServiceStatus(ctx context.Context, env *Env, q beacon.StatusQuery) error {
	if q.Lines < 0 || q.Lines > 10000 {
		return usagef("--lines must be between 1 and 10000")
	}
	q.Reading = reading(env, q.StaleAfter)
	res, err := readStore(ctx, env, func(st store.Store) (*beacon.StatusResult, error) { return beacon.Status(ctx, st, q) })
	if err != nil {
		return err
	}
	return emit(env, "stado.service.status", res, func(t *text) {
		for i, e := range res.Hosts {
			if i > 0 {
				t.f("\n")
			}
			statusText(t, e, q.Lines)
		}
	})
}

// statusText writes one host's status: the row, the recovery its answering
// carries, then its log lines or the command that reads them.
func statusText(t *text, e beacon.StatusEntry, lines int) {
	rowLines := e.Row.Lines()
	rowLines = slices.Insert(rowLines, 1, "  source: "+cmp.Or(e.Source, "-"))
	t.lines(rowLines)
	if a := e.Answering; a != nil {
		t.indented("    ", register.BeaconLines(a.Recovery))
	}
	switch {
	case lines > 0 && e.LogsRead != "":
		t.f("  logs: could not be read: %s\n", e.LogsRead)
	case lines > 0:
		t.f("  last %d log line(s):\n", len(e.Logs))
		t.indented("    ", e.Logs)
	case e.Failed():
		t.f("  read its log: %s\n", e.LogsHint)
	}
}

func newHostHealthCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "health",
		Usage: "per host: beacon age, pass, version, counts by verdict and refusals (no SSH)",
		UsageText: "stado host health [--host HOST] [--stale-after DURATION] [--json]\n\n" +
			"Below the table, each recovery a host attempted on another host's service (peer recovery), step by step.\n\n" +
			"example:\n   stado host health --json",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "host", Usage: "only this host"},
			staleFlag(),
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() > 0 {
				return usagef("host health takes no arguments")
			}
			return runHostHealth(c.Context, env, c.String("host"), c.Duration("stale-after"))
		},
	}, true)
}

func runHostHealth(ctx context.Context, env *Env, host string, staleAfter time.Duration) error {
	res, err := readStore(ctx, env, func(st store.Store) (*beacon.HealthResult, error) {
		return beacon.HealthOf(ctx, st, reading(env, staleAfter), host)
	})
	if err != nil {
		return err
	}
	return emit(env, "stado.host.health", res, func(t *text) {
		t.table(beacon.HealthTable(res.Hosts))
		for _, h := range res.Hosts {
			for _, pr := range h.PeerRecoveries {
				t.f("%s saw %s\n", h.Host, pr.Summary())
				t.indented("  ", register.BeaconLines(pr.Recovery))
			}
		}
	})
}

func newRegistryDoctorCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "doctor",
		Usage: "diff every host's declarations against its beacon; exit 3 when anything needs attention (no SSH)",
		UsageText: "stado registry doctor [--stale-after DURATION] [--json]\n\n" +
			"Reports declared-but-missing, failing and failed units, undeclared loaded units, incomplete\n" +
			"declarations, stale or absent beacons, unsuccessful answers and refusals the hosts met.\n\n" +
			"example:\n   stado registry doctor --json",
		Flags: []ucli.Flag{staleFlag()},
		Action: func(c *ucli.Context) error {
			if c.NArg() > 0 {
				return usagef("registry doctor takes no arguments")
			}
			return runRegistryDoctor(c.Context, env, c.Duration("stale-after"))
		},
	}, true)
}

// errNeedsAttention makes doctor exit 3 after printing its findings.
var errNeedsAttention = &Refusal{Code: "needs_attention", Message: "the fleet needs attention"}

func runRegistryDoctor(ctx context.Context, env *Env, staleAfter time.Duration) error {
	res, err := readStore(ctx, env, func(st store.Store) (*beacon.DoctorResult, error) {
		return beacon.DoctorOf(ctx, st, reading(env, staleAfter))
	})
	if err != nil {
		return err
	}
	err = emit(env, "stado.registry.doctor", res, func(t *text) {
		if res.OK {
			t.f("ok: every declaration matches its host's fresh beacon\n")
			return
		}
		t.table(beacon.FindingsTable(res.Findings))
	})
	if err == nil && !res.OK {
		err = errNeedsAttention
	}
	return err
}
