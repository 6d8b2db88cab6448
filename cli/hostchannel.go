package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/hostprocess"
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

// machine is the machine this process runs on, as env describes it, for
// the processes package hostprocess assembles.
func machine(env *Env) hostprocess.Machine {
	return hostprocess.Machine{Home: homeDir(env), Getenv: env.Getenv, StoreURL: env.StoreURL, OpenStore: env.OpenStore, Version: Version, Now: env.Now}
}

// runHostChannel serves one verb; its error (nil, the refusal the channel
// printed, or the host's failure) goes through the CLI's one exit-code
// table, which gives the channel's own exit codes 0, 3 and 1.
func runHostChannel(ctx context.Context, env *Env, args []string) error {
	err := channel.Run(ctx, args, os.LookupEnv, env.Stdin, env.Stdout, io.Discard, machine(env).LocalHost())
	var r *channel.Refusal
	if errors.As(err, &r) {
		return &channel.Refusal{Code: r.Code, Message: fmt.Sprintf("host channel refused (%s): %s", r.Code, r.Message), Err: err}
	}
	return err
}
