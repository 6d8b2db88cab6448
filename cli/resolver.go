package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/repair"
	"github.com/wisent/stado/resolver"
)

// peerContributor builds the peer recovery of a host process: this host's
// waiting list under $HOME, the catalog of the store read every pass, and
// the Remote executor over the registry's SSH channel. The channel takes
// its known_hosts, identities and ssh_config from STADO_KNOWN_HOSTS,
// STADO_SSH_IDENTITY (comma-separated) and STADO_SSH_CONFIG, else the ~/.ssh
// defaults; host keys are always checked.
func peerContributor(env *Env, st registry.Store) (*repair.Peer, func()) {
	home := homeDir(env)
	var ids []string
	for _, id := range strings.Split(env.Getenv("STADO_SSH_IDENTITY"), ",") {
		if id = strings.TrimSpace(id); id != "" {
			ids = append(ids, id)
		}
	}
	pool := channel.NewPool(&channel.Dialer{
		KnownHostsPath: env.Getenv("STADO_KNOWN_HOSTS"),
		IdentityFiles:  ids,
		SSHConfigPath:  env.Getenv("STADO_SSH_CONFIG"),
	})
	remote := &repair.Remote{
		Pool: pool,
		Target: func(host string) (registry.Target, bool) {
			doc, _, err := registry.Load(context.Background(), st)
			if err != nil {
				return registry.Target{}, false
			}
			return repair.TargetsOf(doc)(host)
		},
		Now: env.Now,
	}
	peer := &repair.Peer{
		ListPath:    resolver.ListPath(home),
		LoadCatalog: func(ctx context.Context) (*catalog.Catalog, error) { return catalog.Load(ctx, st) },
		Executor:    remote,
		Register:    repair.HomeRegister(home),
		Now:         env.Now,
		Logger:      env.Logger,
	}
	return peer, func() { _ = pool.Close() }
}

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

func callerHost(name string) (string, error) {
	if name == "" {
		h, err := os.Hostname()
		if err != nil {
			return "", fmt.Errorf("read hostname: %w", err)
		}
		name = h
	}
	if !registry.ValidTargetName(name) {
		return "", refuse("validation", "host name %q is not a valid target name", name)
	}
	return name, nil
}

type resolverResolveOptions struct {
	Service string
	Host    string
}

func newResolverResolveCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:      "resolve",
		Usage:     "print where a service answers for this host, as the directory says",
		ArgsUsage: "NAME|stado://service/NAME",
		UsageText: "stado resolver resolve NAME [--host CALLER] [--json]\n\n" +
			"Refused (exit 3) when the directory has no entry for NAME (not_found) or lists callers\n" +
			"without this host (caller_not_allowed).\n\n" +
			"example:\n   stado resolver resolve stado://service/brama --host host1 --json",
		Flags: []ucli.Flag{callerFlag()},
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return usagef("resolver resolve takes one service name")
			}
			return runResolverResolve(c.Context, env, resolverResolveOptions{Service: c.Args().First(), Host: c.String("host")})
		},
	}, true)
}

// resolvedDoc is the --json output of resolver resolve.
type resolvedDoc struct {
	Kind string `json:"kind"`
	resolver.Endpoint
	Caller       string `json:"caller"`
	EndpointAddr string `json:"endpoint"`
}

func runResolverResolve(ctx context.Context, env *Env, o resolverResolveOptions) error {
	caller, err := callerHost(o.Host)
	if err != nil {
		return err
	}
	st, err := openStore(ctx, env)
	if err != nil {
		return err
	}
	defer st.Close()
	r := &resolver.Resolver{Load: resolver.FromStore(st), Caller: caller, Now: env.Now}
	ep, err := r.Resolve(ctx, o.Service)
	if errors.Is(err, resolver.ErrBadURI) {
		return usagef("%v", err)
	}
	if err != nil {
		return err
	}
	if env.JSON {
		return printJSON(env, resolvedDoc{Kind: "stado.resolver.endpoint", Endpoint: ep, Caller: caller, EndpointAddr: ep.String()})
	}
	_, err = fmt.Fprintf(env.Stdout, "%s on %s at %s\n", ep.Service, ep.Host, ep)
	return err
}

type resolverProxyOptions struct {
	Service string
	Listen  string
	TCP     bool
	Host    string
	Client  string
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
			return runResolverProxy(c.Context, env, resolverProxyOptions{
				Service: c.String("service"), Listen: c.String("listen"), TCP: c.Bool("tcp"),
				Host: c.String("host"), Client: c.String("client"),
			})
		},
	}, false)
}

func runResolverProxy(ctx context.Context, env *Env, o resolverProxyOptions) error {
	caller, err := callerHost(o.Host)
	if err != nil {
		return err
	}
	ap, err := netip.ParseAddrPort(o.Listen)
	if err != nil || !ap.Addr().Is4() || !ap.Addr().IsLoopback() {
		return usagef("--listen %q: want a loopback IPv4 address and port, such as 127.0.0.1:18080", o.Listen)
	}
	st, err := openStore(ctx, env)
	if err != nil {
		return err
	}
	defer st.Close()
	r := &resolver.Resolver{Load: resolver.FromStore(st), Caller: caller, Now: env.Now}
	ep, err := r.Resolve(ctx, o.Service)
	if err != nil {
		return err
	}
	home := env.Getenv("HOME")
	if home == "" {
		if home, err = os.UserHomeDir(); err != nil {
			return fmt.Errorf("find the home directory: %w", err)
		}
	}
	rec := &resolver.Recorder{Now: env.Now}
	pub := &resolver.Publisher{Path: resolver.ListPath(home), Recorder: rec, RefreshSeconds: r.RefreshSeconds, Now: env.Now}
	if err := pub.Publish(); err != nil {
		return err
	}
	proxy := &resolver.Proxy{
		Service:   o.Service,
		Transport: &resolver.Transport{Resolver: r, Recorder: rec},
		Client:    o.Client,
		Logger:    env.Logger.With("service", o.Service),
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		_ = pub.Withdraw()
		return fmt.Errorf("listen %s: %w", o.Listen, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := pub.Run(ctx); err != nil {
			env.Logger.Warn("withdraw waiting list", "err", err)
		}
	}()
	mode := "http"
	if o.TCP {
		mode = "tcp"
	}
	env.Logger.Info("resolver proxy", "service", o.Service, "host", ep.Host, "endpoint", ep.String(),
		"listen", ln.Addr().String(), "mode", mode, "caller", caller, "waiting_list", pub.Path, "pid", os.Getpid())
	var serveErr error
	if o.TCP {
		serveErr = proxy.ServeTCP(ctx, ln)
	} else {
		srv := &http.Server{Handler: proxy.Handler(), ReadHeaderTimeout: 10 * time.Second}
		stop := context.AfterFunc(ctx, func() {
			shut, c := context.WithTimeout(context.Background(), 2*time.Second)
			defer c()
			_ = srv.Shutdown(shut)
		})
		defer stop()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			serveErr = fmt.Errorf("serve %s: %w", o.Listen, err)
		}
	}
	cancel()
	wg.Wait()
	return serveErr
}
