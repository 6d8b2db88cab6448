package cli

import (
	"context"
	"errors"
	"os"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/channel/keeper"
)

// hostKeeperOptions are the flags of host keeper.
type hostKeeperOptions struct {
	Idle   time.Duration
	Socket string
}

// newHostKeeperCommand is `stado host keeper`, the per-user process that
// keeps SSH connections open between stado commands. It is hidden: stado
// starts it on demand (Env.StartKeeper, startThisKeeper).
func newHostKeeperCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:   "keeper",
		Hidden: true,
		Usage:  "keep SSH connections to hosts open between stado commands (started on demand)",
		UsageText: "stado host keeper [--idle 60s] [--socket PATH]\n\n" +
			"Listens on a unix socket ($XDG_RUNTIME_DIR/stado/keeper.sock, else ~/.stado/run/keeper.sock)\n" +
			"for the host calls of stado commands run by the same user, and runs them over one kept\n" +
			"SSH connection per host and identity. Before every reuse the connection's host key is\n" +
			"checked against known_hosts as a new connection's would be. It exits after --idle\n" +
			"without a call, and at once (exit 0) when another keeper already serves the socket.\n" +
			"stado starts it when a command first needs a host; --no-keeper (STADO_NO_KEEPER) dials directly.\n\n" +
			"example:\n   stado host keeper --idle 5m",
		Flags: []ucli.Flag{
			&ucli.DurationFlag{Name: "idle", Value: keeper.DefaultIdle, Usage: "exit after this long without a call"},
			&ucli.StringFlag{Name: "socket", Usage: "unix socket to listen on (default $XDG_RUNTIME_DIR/stado/keeper.sock, else ~/.stado/run/keeper.sock)"},
		},
		Action: func(c *ucli.Context) error {
			return runHostKeeper(c.Context, env, hostKeeperOptions{Idle: c.Duration("idle"), Socket: c.String("socket")})
		},
	}, false)
}

func runHostKeeper(ctx context.Context, env *Env, o hostKeeperOptions) error {
	if o.Idle <= 0 {
		return usagef("--idle must be positive")
	}
	err := keeper.Serve(ctx, keeper.Config{Socket: o.Socket, Idle: o.Idle, Logger: env.Logger})
	if errors.Is(err, keeper.ErrRunning) {
		return nil // another keeper serves: nothing to do
	}
	return err
}

// startThisKeeper is the start of a real stado process's keeper: this
// executable's `host keeper`, detached. Nil when the executable cannot be
// named.
func startThisKeeper() func() error {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	return func() error { return keeper.StartProcess(exe, []string{"host", "keeper"}) }
}
