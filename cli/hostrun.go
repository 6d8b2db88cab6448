package cli

import (
	"context"
	"os"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/channel/sshclient"
	"github.com/wisent/stado/metrics"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/release"
	"github.com/wisent/stado/repair"
	"github.com/wisent/stado/store"
	"github.com/wisent/stado/store/etcdstore"
	"github.com/wisent/stado/units"
)

// hostRunOptions are the flags of host run.
type hostRunOptions struct {
	Host       string
	Interval   time.Duration
	StaleAfter time.Duration
	Listen     string
	Passes     int
	// PeerRecoveries caps the peer recoveries running at once (0: the default)
	PeerRecoveries int
}

func newHostRunCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "run",
		Usage: "run this host's stado process: publish a beacon every pass and serve the release API and /metrics",
		UsageText: "stado host run [--host NAME] [--interval 15s] [--stale-after 45s] [--listen ADDR:PORT] [--peer-recoveries 2]\n\n" +
			"Meant to run under the host's init system as the stado product (stado service ensure stado --host NAME).\n" +
			"Each pass observes every declared unit and the undeclared loaded ones, compares each declared unit's\n" +
			"file with what ensure would write (its drift), asks the answering questions,\n" +
			"reads this host's resolver waiting list, and publishes beacons/<host> to the store.\n" +
			"Beside its passes it serves /healthz, the release routes and /metrics (Prometheus; docs/metrics.md).\n\n" +
			"example:\n   stado host run --host host1 --store file:///var/lib/stado/store --interval 5s",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "host", Usage: "the registry target this process runs as (default: the hostname)", EnvVars: []string{"STADO_HOST"}},
			&ucli.DurationFlag{Name: "interval", Value: 15 * time.Second, Usage: "time between passes", EnvVars: []string{"STADO_INTERVAL"}},
			&ucli.DurationFlag{Name: "stale-after", Usage: "age after which readers distrust a beacon", DefaultText: "3 × interval"},
			&ucli.StringFlag{Name: "listen", Usage: "HTTP address (default: the directory's port for stado on this host, at the target's address)"},
			&ucli.IntFlag{Name: "passes", Usage: "stop after this many passes (0: run until SIGTERM); before each pass after the first, wait for the peer recoveries the previous one started", Hidden: true},
			&ucli.IntFlag{Name: "peer-recoveries", Value: repair.DefaultPeerConcurrency, Usage: "at most this many recoveries of other hosts' services run at once, off the pass", EnvVars: []string{"STADO_PEER_RECOVERIES"}},
		},
		Action: func(c *ucli.Context) error {
			return runHostRun(c.Context, env, hostRunOptions{
				Host: c.String("host"), Interval: c.Duration("interval"), StaleAfter: c.Duration("stale-after"),
				Listen: c.String("listen"), Passes: c.Int("passes"),
				PeerRecoveries: c.Int("peer-recoveries"),
			})
		},
	}, false)
}

func runHostRun(ctx context.Context, env *Env, o hostRunOptions) error {
	beacon.SetHostGCTarget()
	host, err := registry.ThisTarget(o.Host)
	if err != nil {
		return err
	}
	if o.Interval <= 0 {
		return usagef("--interval must be positive")
	}
	if o.PeerRecoveries < 1 {
		return usagef("--peer-recoveries must be at least 1")
	}
	st, err := openStore(ctx, env)
	if err != nil {
		return err
	}
	defer st.Close()
	// every store operation of the process timed for /metrics
	m := metrics.New(env.Now())
	st = m.Instrument(st)
	// an init system out of reach is each pass's units_unreadable refusal, never an exit
	mgr, adminDirs := beacon.OpenInitSystem(ctx, units.OpenHostManager, homeDir(env))
	defer mgr.Close()
	// the user managers of user-scope declarations, one per user, kept
	// across passes; the observer and the restarts share them
	users := &units.UserManagers{}
	defer users.Close()
	// peer recoveries run off the pass, o.PeerRecoveries at once
	contributors, stopContrib, err := hostContributors(ctx, env, st, host, mgr, users, o.PeerRecoveries)
	if err != nil {
		return err
	}
	defer stopContrib()

	// READY=1 and the watchdog under a Type=notify unit; nil elsewhere
	notifier, err := beacon.SystemdNotifier()
	if err != nil {
		env.Logger.Warn("host run", "err", err)
	}
	runner := &beacon.Runner{
		Host: host, Store: st, Config: beacon.ConfigFor(env.StoreURL, o.Interval, o.StaleAfter), Contributors: contributors,
		Observer: &beacon.UnitsObserver{Manager: mgr, AdminDirs: adminDirs, Users: users},
		Identity: beacon.MachineIdentity(env.Now()),
		Version:  Version, Logger: env.Logger.With("host", host), Now: env.Now, Notifier: notifier,
		PassObserver: m, MetricsHandler: m.Handler(),
		ReleaseRoot: release.Root(env.Getenv, os.Geteuid(), homeDir(env)),
		// each declared unit's file against ensure's rendering, with the
		// product settings of the store's catalog as the host channel merges them
		Files: &beacon.UnitFiles{Catalog: func(ctx context.Context) (*catalog.Catalog, error) { return catalog.LoadOrShipped(ctx, st) }},
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopServing := runner.ServeAPI(ctx, o.Listen)
	env.Logger.Info("host run", "host", host, "interval", o.Interval, "store", etcdstore.Redact(env.StoreURL))
	if o.Passes == 0 {
		_ = runner.Run(ctx)
	}
	for i := 0; i < o.Passes && ctx.Err() == nil; i++ {
		if i > 0 {
			// a bounded run lets the peer recoveries the last pass started
			// end, so that this pass reports their outcomes
			repair.WaitPeers(contributors)
			select {
			case <-ctx.Done():
			case <-time.After(o.Interval):
			}
		}
		if _, err := runner.RunPass(ctx); err != nil {
			env.Logger.Warn("beacon pass", "err", err)
		}
	}
	stopServing()
	env.Logger.Info("host run stopped", "host", host)
	return nil
}

// hostContributors are the answering and peer contributors of this host
// (repair.HostProcess) and the service-protocol evidence (svcproto). The
// SSH channel to the peers is configured by the environment
// (sshclient.DialerFromEnv).
func hostContributors(ctx context.Context, env *Env, st store.Store, host string, mgr units.Manager, users beacon.UserManagers, peerConcurrency int) ([]beacon.Contributor, func(), error) {
	peers, closePeers := sshConnector(sshclient.DialerFromEnv(env.Getenv), nil)
	cs, stop, err := repair.HostProcess{Store: st, Host: host, Manager: mgr, Users: users, Home: homeDir(env), StoreURL: env.StoreURL, Peers: peers, PeerConcurrency: peerConcurrency, Now: env.Now, Logger: env.Logger}.Contributors(ctx)
	if err != nil {
		closePeers()
		return nil, nil, err
	}
	// the service-protocol evidence of declarations naming an executable
	ev := &beacon.ProtocolEvidence{Now: env.Now}
	return append(cs, ev), func() { stop(); ev.Close(); closePeers() }, nil
}
