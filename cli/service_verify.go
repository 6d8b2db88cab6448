package cli

import (
	"context"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/fleet"
)

// ---------------------------------------------------------------- verify

func newServiceVerifyCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "verify",
		Usage: "read every declared service on its host: running, unit bytes as declared, directory port owned (changes nothing)",
		UsageText: "stado service verify [NAME] [--host HOST...] [--parallel N] [--json]\n\n" +
			"One channel call per host, hosts read in parallel. Per host: reachable, or the stage its call\n" +
			"failed at (resolve, connect, handshake, host_key, auth, command). Per declared service (only NAME\n" +
			"when given): loaded, active, inactive, failed or failing with its evidence; whether the installed\n" +
			"unit file holds the bytes the declaration renders on that host (a diff when not); and, for a\n" +
			"service with a directory entry on the host, whether its own processes listen on that port and\n" +
			"address. Exit 0 when everything is clean, 3 (needs_attention) when a service is not, 1 when a\n" +
			"host could not be read.\n\n" +
			"example:\n   stado service verify brama --host host2 --json",
		Flags: append([]ucli.Flag{
			hostsFlag("only this target (repeatable)"),
			parallelFlag(),
		}, sshFlags()...),
		Action: func(c *ucli.Context) error {
			if c.NArg() > 1 {
				return usagef("service verify takes at most one NAME")
			}
			return withFleet(c, env, func(ctx context.Context, f *fleet.Fleet) error {
				return runServiceVerify(ctx, env, f, fleet.VerifyOptions{Name: c.Args().First(), Hosts: c.StringSlice("host")})
			})
		},
	}, true)
}

func runServiceVerify(ctx context.Context, env *Env, f *fleet.Fleet, o fleet.VerifyOptions) error {
	res, err := f.Verify(ctx, o, func(h fleet.HostVerify) { streamLines(env, h.Lines()) })
	if err != nil {
		return err
	}
	if perr := emit(env, "stado.service.verify", res, func(*text) {}); perr != nil {
		return perr
	}
	return res.Outcome()
}

// ---------------------------------------------------------------- serving

func newServiceServingCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "serving",
		Usage: "wait until a declared service's unit owns its directory port, or refuse with the evidence",
		UsageText: "stado service serving NAME --host HOST --wait [--timeout D] [--json]\n\n" +
			"Reads the host (one channel call per poll) until a process of the declared unit listens on the\n" +
			"service's directory port at its declared address, and prints that pid and address. It refuses\n" +
			"(exit 3) when the unit's process exits (not_serving, with the last exit code and the last line\n" +
			"the program wrote), when the unit keeps listening on other ports (serving_elsewhere, naming\n" +
			"them), and when --timeout passes first (serving_timeout). The port is the directory's: --port\n" +
			"is refused with --wait, since only a declared port has a readiness to prove.\n\n" +
			"example:\n   stado service serving brama --host host2 --wait --timeout 30s --json",
		Flags: append([]ucli.Flag{
			hostFlag("the target to read (required)"),
			&ucli.BoolFlag{Name: "wait", Usage: "wait for the unit to serve its directory port (required)"},
			&ucli.DurationFlag{Name: "timeout", Value: fleet.DefaultServingTimeout, Usage: "bound on the wait"},
			&ucli.IntFlag{Name: "port", Usage: "not accepted with --wait: the directory declares the port"},
		}, sshFlags()...),
		Action: writeAction(env, "NAME", func(ctx context.Context, f *fleet.Fleet, c *ucli.Context, name string) error {
			switch {
			case c.IsSet("port") && c.Bool("wait"):
				return usagef("service serving takes no --port with --wait: it waits for the port the directory declares for %s", name)
			case !c.Bool("wait"):
				return usagef("service serving needs --wait (it waits for the directory port to be served)")
			}
			res, err := f.WaitServing(ctx, fleet.ServingOptions{Name: name, Host: c.String("host"), Timeout: c.Duration("timeout")})
			if res == nil {
				return err
			}
			return report(env, "stado.service.serving", res, err, res.Lines)
		}),
	}, true)
}
