package cli

import (
	"context"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/channel/sshclient"
	"github.com/wisent/stado/hostprocess"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/repair"
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
	return hostprocess.Process{
		Machine: machine(env), Target: host, Store: st,
		Interval: o.Interval, StaleAfter: o.StaleAfter, Listen: o.Listen, Passes: o.Passes, PeerRecoveries: o.PeerRecoveries,
		// the SSH channel to the peers is configured by the environment
		// (sshclient.DialerFromEnv)
		Peers:  func() (channel.Connector, func()) { return sshConnector(sshclient.DialerFromEnv(env.Getenv), nil) },
		Logger: env.Logger,
	}.Run(ctx)
}
