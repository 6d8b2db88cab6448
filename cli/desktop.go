package cli

import (
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/desktop"
)

// desktopOptions are the flags of desktop.
type desktopOptions struct {
	Listen     string
	Open       bool
	Refresh    time.Duration
	StaleAfter time.Duration
}

func newDesktopCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "desktop",
		Usage: "serve Stado Desktop, a local web page of the fleet: services table, inspector, routes operations",
		UsageText: "stado desktop [--listen 127.0.0.1:PORT] [--open] [--refresh DURATION] [--json]\n\n" +
			"Listens on loopback only and prints the page's address once, with a random access token in it;\n" +
			"a request without the token is refused (403), and a restart needs the page's CSRF token and a\n" +
			"confirmation. The table is joined from beacons without SSH; operations ride the host channel.\n" +
			"With --json the address is printed as one JSON document. Stop it with Ctrl-C.\n\n" +
			"example:\n   stado desktop --listen 127.0.0.1:7480 --open",
		Flags: append([]ucli.Flag{
			&ucli.StringFlag{Name: "listen", Value: "127.0.0.1:7480", Usage: "loopback address to listen on (port 0 picks a free one)"},
			&ucli.BoolFlag{Name: "open", Usage: "open the page in the desktop's browser (xdg-open, or open on macOS)"},
			&ucli.DurationFlag{Name: "refresh", Value: 5 * time.Second, Usage: "the page re-reads the table at least this often (and whenever the store changes)"},
			staleFlag(),
		}, sshFlags()...),
		Action: func(c *ucli.Context) error {
			if c.NArg() > 0 {
				return usagef("desktop takes no arguments")
			}
			return runDesktop(c, env, desktopOptions{Listen: c.String("listen"), Open: c.Bool("open"), Refresh: c.Duration("refresh"), StaleAfter: c.Duration("stale-after")})
		},
	}, true)
}

// desktopDoc is the --json form of desktop's one announcement.
type desktopDoc struct {
	URL    string `json:"url"`
	Listen string `json:"listen"`
}

func runDesktop(c *ucli.Context, env *Env, o desktopOptions) error {
	if o.Refresh < 500*time.Millisecond {
		return usagef("--refresh must be at least 500ms")
	}
	ln, err := desktop.Listen(o.Listen) // refuses a non-loopback address before anything else
	if err != nil {
		return err
	}
	defer ln.Close()
	ctx := c.Context
	st, err := openStore(ctx, env)
	if err != nil {
		return err
	}
	defer st.Close()
	conn, done := connectorFrom(c, env)
	defer done()
	srv, err := desktop.New(desktop.Config{Store: st, Connect: conn, Now: env.Now, StaleAfter: o.StaleAfter, Refresh: o.Refresh})
	if err != nil {
		return err
	}
	if err := srv.Warm(ctx); err != nil { // an unreadable store is said now, not in the page
		return err
	}
	url := srv.URL(ln)
	if err := emit(env, "stado.desktop", desktopDoc{URL: url, Listen: ln.Addr().String()}, func(t *text) {
		t.f("Stado Desktop: %s\n", url)
		t.f("(the token in this address is the page's only key; it is not printed again)\n")
	}); err != nil {
		return err
	}
	if o.Open {
		// the browser's argv is readable by every user: it gets a
		// one-time address, never the token
		if !desktop.OpenBrowser(ctx, srv.OpenURL(ln)) {
			env.Logger.Warn("desktop: no browser opener (xdg-open, open) found; open the address above by hand")
		}
	}
	return srv.Serve(ctx, ln)
}
