package cli

import (
	"context"
	"io"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/channel/keeper"
	"github.com/wisent/stado/channel/sshclient"
	"github.com/wisent/stado/fleet"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/release/bootstrap"
)

// sshFlags are the flags of every command that opens the host channel.
func sshFlags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.StringFlag{Name: "known-hosts", Usage: "known_hosts file (default ~/.ssh/known_hosts)", EnvVars: []string{"STADO_KNOWN_HOSTS"}},
		&ucli.StringSliceFlag{Name: "identity", Usage: "private key file to try (repeatable)", EnvVars: []string{"STADO_SSH_IDENTITY"}},
		&ucli.StringFlag{Name: "ssh-config", Usage: "ssh_config read for target names (default ~/.ssh/config)", EnvVars: []string{"STADO_SSH_CONFIG"}},
		&ucli.BoolFlag{Name: "accept-new-host-key", Usage: "record an unknown host key instead of refusing it (a changed key is always refused)"},
		&ucli.DurationFlag{Name: "connect-timeout", Usage: "bound on connect, handshake and authentication", DefaultText: "10s"},
		&ucli.BoolFlag{Name: "no-keeper", Usage: "dial fresh connections instead of reusing the ones a per-user keeper holds", EnvVars: []string{"STADO_NO_KEEPER"}},
	}
}

// parallelFlag bounds the fan-out of commands that act on many hosts.
func parallelFlag() ucli.Flag {
	return &ucli.IntFlag{Name: "parallel", Value: channel.DefaultParallel, Usage: "hosts dialing or sending their request at once; hosts whose unit is settling hold no slot " +
		"(16 is measured: a cold 100-host fan-out on 2 cores was as fast at 4–32 and slower at 64+; docs/commands.md)"}
}

// dialerFrom builds the channel dialer the ssh flags name.
func dialerFrom(c *ucli.Context) *sshclient.Dialer {
	return &sshclient.Dialer{
		KnownHostsPath:   c.String("known-hosts"),
		IdentityFiles:    c.StringSlice("identity"),
		SSHConfigPath:    c.String("ssh-config"),
		AcceptNewHostKey: c.Bool("accept-new-host-key"),
		ConnectTimeout:   c.Duration("connect-timeout"),
	}
}

// connectorFrom is the host channel of one command: every target's Host
// rides one pooled connection, or this user's connection keeper unless
// --no-keeper. A keeper whose socket is not this user's alone is never
// used; the command dials directly and says why once on the log (stderr).
// The func it returns closes the pool.
func connectorFrom(c *ucli.Context, env *Env) (channel.Connector, func()) {
	var keeperTransport sshclient.Transport
	if !c.Bool("no-keeper") {
		keeperTransport = &keeper.Client{Start: env.StartKeeper, StartBehind: true, Logger: env.Logger}
	}
	return sshConnector(dialerFrom(c), keeperTransport)
}

// sshConnector is the one place cli builds an SSH pool: every target's Host
// rides one connection per host dialed with d, or transport first when it
// is not nil. The func it returns closes the pool.
func sshConnector(d *sshclient.Dialer, transport sshclient.Transport) (channel.Connector, func()) {
	pool := newSSHPool(d, transport)
	return pool.Connect(), func() { _ = pool.Close() }
}

// newSSHPool is the one SSH pool constructor of cli.
func newSSHPool(d *sshclient.Dialer, transport sshclient.Transport) *sshclient.Pool {
	pool := sshclient.NewPool(d)
	pool.Transport = transport
	return pool
}

// hostShell runs raw argv on t over one connection dialed with d (no
// keeper: a host being bootstrapped has no channel for it to carry), for
// `stado host bootstrap`. The func it returns closes the connection.
func hostShell(d *sshclient.Dialer, t registry.Target) (bootstrap.Shell, func()) {
	pool := newSSHPool(d, nil)
	return poolShell{pool, t}, func() { _ = pool.Close() }
}

// poolShell is bootstrap's Shell over a pool's connection to t.
type poolShell struct {
	pool *sshclient.Pool
	t    registry.Target
}

func (s poolShell) Run(ctx context.Context, argv []string, stdin io.Reader) ([]byte, []byte, error) {
	return s.pool.Exec(ctx, s.t, argv, stdin)
}

// logsReader reads the last lines of a declared service's log through
// fleet over the command's host channel (connectorFrom). The func it also
// returns closes that channel.
func logsReader(c *ucli.Context, env *Env) (func(ctx context.Context, t registry.Target, s registry.Service, lines int) ([]string, error), func()) {
	conn, done := connectorFrom(c, env)
	return func(ctx context.Context, t registry.Target, s registry.Service, lines int) ([]string, error) {
		return fleet.ServiceLogs(ctx, conn, t, s, lines)
	}, done
}
