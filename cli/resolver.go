package cli

import (
	"context"
	"errors"
	"net/netip"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/resolver"
	"github.com/wisent/stado/store"
)

// newResolverCommand is the group of the client-side resolver: resolving
// stado://service/NAME and the local forwarding proxy that records waits.
func newResolverCommand(env *Env) *ucli.Command {
	return &ucli.Command{
		Name:  "resolver",
		Usage: "resolve stado://service/NAME through the directory and proxy local clients to it",
		Subcommands: []*ucli.Command{
			newResolverResolveCommand(env),
			newResolverProxyCommand(env),
		},
	}
}

func callerFlag() ucli.Flag {
	return &ucli.StringFlag{Name: "host", Usage: "the registry target calling (default: the hostname)", EnvVars: []string{"STADO_HOST"}}
}

// storeResolver is a resolver for caller over the directory of the store
// the globals name; close closes the store.
func storeResolver(ctx context.Context, env *Env, caller string) (r *resolver.Resolver, close func() error, err error) {
	if caller, err = registry.ThisTarget(caller); err != nil {
		return nil, nil, err
	}
	st, err := openStore(ctx, env)
	if err != nil {
		return nil, nil, err
	}
	return &resolver.Resolver{Load: resolver.FromStore(st), Caller: caller, Now: env.Now, LoadAnswers: beaconAnswers(st, env)}, st.Close, nil
}

// beaconAnswers reads the fleet's beacons (package beacon's reader, at the
// env's clock) as the evidence the resolver ranks a service's hosts by.
func beaconAnswers(st store.Store, env *Env) func(context.Context) (resolver.Answers, error) {
	return func(ctx context.Context) (resolver.Answers, error) {
		v, err := beacon.LoadView(ctx, st, env.Now(), 0)
		if err != nil {
			return nil, err
		}
		return v.Answers, nil
	}
}

func newResolverResolveCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:      "resolve",
		Usage:     "print where a service answers for this host, as the directory says",
		ArgsUsage: "NAME|stado://service/NAME",
		UsageText: "stado resolver resolve NAME [--host CALLER] [--json]\n\n" +
			"A service on several hosts resolves to CALLER's own copy, else the first host whose fresh beacon\n" +
			"reads its answering question successful, else the first entry in the directory (docs/resolver.md).\n" +
			"Refused (exit 3) when the directory has no entry for NAME (not_found) or lists callers\n" +
			"without this host (caller_not_allowed).\n\n" +
			"example:\n   stado resolver resolve stado://service/brama --host host1 --json",
		Flags: []ucli.Flag{callerFlag()},
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return usagef("resolver resolve takes one service name")
			}
			return runResolverResolve(c.Context, env, c.Args().First(), c.String("host"))
		},
	}, true)
}

// resolvedDoc is the --json output of resolver resolve.
type resolvedDoc struct {
	resolver.Endpoint
	Caller       string `json:"caller"`
	EndpointAddr string `json:"endpoint"`
}

func runResolverResolve(ctx context.Context, env *Env, service, caller string) error {
	r, closeStore, err := storeResolver(ctx, env, caller)
	if err != nil {
		return err
	}
	defer closeStore()
	ep, err := r.Resolve(ctx, service)
	if errors.Is(err, resolver.ErrBadURI) {
		return usagef("%v", err)
	} else if err != nil {
		return err
	}
	return emit(env, "stado.resolver.endpoint", resolvedDoc{Endpoint: ep, Caller: r.Caller, EndpointAddr: ep.String()}, func(t *text) {
		t.lines([]string{ep.Line()})
	})
}

func newResolverProxyCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "proxy",
		Usage: "forward local clients to a service, recording every wait in ~/.stado/resolver-waiting.json",
		UsageText: "stado resolver proxy --service NAME --listen 127.0.0.1:PORT [--tcp] [--host CALLER] [--client NAME]\n\n" +
			"An HTTP reverse proxy (or, with --tcp, a plain TCP forwarder) on a loopback address. Each request\n" +
			"is a wait (open, then answer until the first byte) published with this process's pid at least\n" +
			"once a second. While the service holds a request past service_resolver.refresh_seconds, new\n" +
			"requests are refused at once: a 503 naming the held wait (with --tcp the connection is closed).\n" +
			"Runs until SIGINT or SIGTERM.\n\n" +
			"example:\n   stado resolver proxy --service brama --listen 127.0.0.1:18080 --host host1",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "service", Usage: "the directory name of the service", Required: true},
			&ucli.StringFlag{Name: "listen", Usage: "loopback address to listen on (127.0.0.0/8)", Required: true},
			&ucli.BoolFlag{Name: "tcp", Usage: "forward plain TCP instead of HTTP"},
			callerFlag(),
			&ucli.StringFlag{Name: "client", Usage: "record this name as the client instead of each remote address"},
		},
		Action: func(c *ucli.Context) error {
			return runResolverProxy(c.Context, env, &resolver.ProxyRun{
				Service: c.String("service"), Listen: c.String("listen"), TCP: c.Bool("tcp"), Client: c.String("client"),
			}, c.String("host"))
		},
	}, false)
}

// runResolverProxy runs p (its service, listen address and mode set) for
// caller until ctx ends.
func runResolverProxy(ctx context.Context, env *Env, p *resolver.ProxyRun, caller string) error {
	if ap, err := netip.ParseAddrPort(p.Listen); err != nil || !ap.Addr().Is4() || !ap.Addr().IsLoopback() {
		return usagef("--listen %q: want a loopback IPv4 address and port, such as 127.0.0.1:18080", p.Listen)
	}
	r, closeStore, err := storeResolver(ctx, env, caller)
	if err != nil {
		return err
	}
	defer closeStore()
	p.Resolver, p.ListPath, p.Logger = r, resolver.ListPath(homeDir(env)), env.Logger
	return p.Run(ctx)
}
