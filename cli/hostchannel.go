package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/channel/local"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/release"
	"github.com/wisent/stado/release/hostend"
)

// newHostChannelCommand is `stado host channel`, the remote end of the host
// channel: one verb per call, from its arguments or, as an authorized_keys
// forced command, from SSH_ORIGINAL_COMMAND. Flags are not parsed: every
// word goes to the channel's grammar, which refuses anything outside it.
func newHostChannelCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "channel",
		Usage: "serve one host-channel verb (the SSH forced command); prints one JSON document",
		UsageText: "stado host channel [VERB ARGS...]\n\n" +
			"Without arguments it serves $SSH_ORIGINAL_COMMAND, as sshd runs it for a key\n" +
			"restricted in authorized_keys with\n" +
			"   command=\"/usr/local/bin/stado host channel\",restrict ssh-ed25519 AAAA... operator\n" +
			"Verbs (docs/channel.md): " + channel.VerbNames() + ".\n" +
			"Anything else is refused with exit 3 having run nothing.\n\n" +
			"example:\n   stado host channel unit-show system brama.service",
		SkipFlagParsing: true,
		Action: func(c *ucli.Context) error {
			args := c.Args().Slice()
			if len(args) == 1 && (args[0] == "--help" || args[0] == "-h") {
				return ucli.ShowCommandHelp(c.Lineage()[1], "channel") // help is shown by the parent
			}
			return runHostChannel(c.Context, env, args)
		},
	}, false)
}

// newLocalHost is this machine as a channel.Host: its init system, its
// unit files and /proc, and the repair steps of its store's catalog (run by
// channel/local's step runner, the one every recovery reaches).
func newLocalHost(env *Env) *local.Host {
	h := local.New(homeDir(env), env.Getenv("USER"), Version)
	h.Now = env.Now
	h.Catalog = func(ctx context.Context) (*catalog.Catalog, error) { return hostCatalog(ctx, env) }
	h.Release = func(ctx context.Context) (*hostend.Host, func(), error) { return hostRelease(ctx, env) }
	return h
}

// maxReleasePeers bounds the peers a host asks for chunks its store lacks.
const maxReleasePeers = 8

// hostRelease is what the release verbs need beyond the init system: this
// host's release directory, the store it names (as hostCatalog) for
// manifests and bytes, its own beacon there to prove a stado activation,
// and its peers' host APIs for chunks the store lacks. The func it returns
// closes the store.
func hostRelease(ctx context.Context, env *Env) (*hostend.Host, func(), error) {
	root := release.Root(env.Getenv, os.Geteuid(), homeDir(env))
	st, err := env.OpenStore(ctx, env.StoreURL)
	if err != nil {
		// release-state needs no store; an activation says why it has none
		return &hostend.Host{Root: root, Source: hostend.NoSource{Err: err}}, func() {}, nil
	}
	rh := &hostend.Host{Root: root, Source: hostend.StoreSource{Store: st}}
	if name, err := registry.ThisTarget(env.Getenv("STADO_HOST")); err == nil {
		rh.BeaconProof = func(ctx context.Context, since time.Time) (string, error) {
			return beacon.PublishedVersion(ctx, st, name, since)
		}
		rh.Source = hostend.PeerSource{Source: rh.Source, Peers: func(ctx context.Context) []hostend.Peer {
			var ps []hostend.Peer
			for _, p := range beacon.PeerAPIs(ctx, st, name, maxReleasePeers) {
				ps = append(ps, hostend.Peer{Host: p.Host, URL: p.URL})
			}
			return ps
		}}
	}
	return rh, func() { st.Close() }, nil
}

// hostCatalog is the catalog of the store this host names ($STADO_STORE or
// ~/.stado/store), which may extend the shipped one. A host whose store
// cannot be read still has the shipped catalog; a site catalog that is
// invalid is an error, never silently ignored.
func hostCatalog(ctx context.Context, env *Env) (*catalog.Catalog, error) {
	st, err := env.OpenStore(ctx, env.StoreURL) // named by bindGlobals
	if err != nil {
		return catalog.LoadOrShipped(ctx, nil)
	}
	defer st.Close()
	return catalog.LoadOrShipped(ctx, st)
}

// runHostChannel serves one verb; its error (nil, the refusal the channel
// printed, or the host's failure) goes through the CLI's one exit-code
// table, which gives the channel's own exit codes 0, 3 and 1.
func runHostChannel(ctx context.Context, env *Env, args []string) error {
	err := channel.Run(ctx, args, os.LookupEnv, env.Stdin, env.Stdout, io.Discard, newLocalHost(env))
	var r *channel.Refusal
	if errors.As(err, &r) {
		return &channel.Refusal{Code: r.Code, Message: fmt.Sprintf("host channel refused (%s): %s", r.Code, r.Message), Err: err}
	}
	return err
}
