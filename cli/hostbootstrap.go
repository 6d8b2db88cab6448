package cli

import (
	"context"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/channel/sshclient"
	"github.com/wisent/stado/release/bootstrap"
)

type hostBootstrapOptions struct {
	Host          string
	Version       string
	Keys          []string // minisign public key files
	ChannelKey    string   // OpenSSH public key file of the operator
	ForcedCommand bool
}

// newHostBootstrapCommand is `stado host bootstrap HOST`: a host with only
// sshd becomes a stado host (release/bootstrap does the work).
func newHostBootstrapCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:      "bootstrap",
		Usage:     "make a host that runs only sshd a stado host, over plain SSH; running it again changes nothing",
		ArgsUsage: "HOST",
		UsageText: "stado host bootstrap HOST [--version V] --key PUB [--key PUB...] [--channel-key SSH.pub [--forced-command]] [--json]\n\n" +
			"Logs in as root, reads the host's OS and architecture, fetches stado V for\n" +
			"them from the store and verifies it with the release keys PUB (minisign), then:\n" +
			"installs the image under /var/lib/stado/release, pins the keys, writes the\n" +
			"state file and the current link, links /usr/local/bin/stado to it, writes\n" +
			"~/.stado/store-url, installs, enables and starts stado.service (the catalog's\n" +
			"stado product rendered). Each step first reads whether the host already has\n" +
			"its effect. With --channel-key it prints the authorized_keys line restricting\n" +
			"that key to the channel; --forced-command installs it. Log in with another key\n" +
			"than the channel key: once restricted, that key reaches only the channel.\n\n" +
			"example:\n   stado host bootstrap host3 --version 1.4.0 --key release.pub --channel-key ~/.ssh/operator.pub --forced-command",
		Flags: append([]ucli.Flag{
			&ucli.StringFlag{Name: "version", Usage: "stado version to install (published with stado release publish)", DefaultText: "the version the registry declares for stado on HOST"},
			&ucli.StringSliceFlag{Name: "key", Usage: "release public key file (minisign) to verify with and pin (repeatable)", Required: true},
			&ucli.StringFlag{Name: "channel-key", Usage: "the operator's SSH public key file, to restrict to the channel"},
			&ucli.BoolFlag{Name: "forced-command", Usage: "install the restricting line in the login user's ~/.ssh/authorized_keys instead of printing it"},
		}, bootstrapSSHFlags()...),
		Action: func(c *ucli.Context) error {
			host, err := oneArg(c, "HOST")
			if err != nil {
				return err
			}
			return runHostBootstrap(c.Context, env, dialerFrom(c), hostBootstrapOptions{Host: host, Version: c.String("version"),
				Keys: c.StringSlice("key"), ChannelKey: c.String("channel-key"), ForcedCommand: c.Bool("forced-command")})
		},
	}, true)
}

func runHostBootstrap(ctx context.Context, env *Env, d *sshclient.Dialer, opts hostBootstrapOptions) error {
	req := bootstrap.Request{Host: opts.Host, Version: opts.Version, StoreURL: env.StoreURL, ForcedCommand: opts.ForcedCommand, Now: env.Now}
	if err := req.ReadKeys(opts.Keys, opts.ChannelKey); err != nil {
		return err
	}
	st, err := openStore(ctx, env)
	if err != nil {
		return err
	}
	defer st.Close()
	target, declared, err := bootstrap.Target(ctx, st, opts.Host)
	if err != nil {
		return err
	}
	if req.Version == "" {
		if req.Version = declared; declared == "" {
			return usagef("host bootstrap %s: give --version: the registry declares no stado version for it", opts.Host)
		}
	}
	sh, done := hostShell(d, target)
	defer done()
	res, err := bootstrap.Run(ctx, sh, bootstrap.StoreSource(st), req)
	if err != nil {
		return err
	}
	return emit(env, "stado.host.bootstrap", res, func(t *text) {
		t.f("%s: stado %s (%s/%s, sha256 %s)\n", res.Host, res.Version, res.OS, res.Arch, res.SHA256)
		rows := make([][]string, 0, len(res.Steps))
		for _, s := range res.Steps {
			rows = append(rows, []string{s.Name, s.Outcome, s.Detail})
		}
		t.table([]string{"STEP", "OUTCOME", "DETAIL"}, rows)
		if res.AuthorizedKey != "" {
			t.f("authorized_keys line:\n%s\n", res.AuthorizedKey)
		}
	})
}

// bootstrapSSHFlags are the ssh flags without --no-keeper: a bootstrap
// never goes through the keeper (there is no channel on the host yet).
func bootstrapSSHFlags() []ucli.Flag {
	var fs []ucli.Flag
	for _, f := range sshFlags() {
		if f.Names()[0] != "no-keeper" {
			fs = append(fs, f)
		}
	}
	return fs
}
