package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"github.com/wisent/stado/refusal"
	"os"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/channel"
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
			"Verbs: unit-install unit-remove unit-start unit-stop unit-restart unit-show\n" +
			"unit-logs unit-env unit-list port-owner repair-step version (docs/channel.md).\n" +
			"Anything else is refused with exit 3 having run nothing.\n\n" +
			"example:\n   stado host channel unit-show system brama.service",
		SkipFlagParsing: true,
		Action: func(c *ucli.Context) error {
			args := c.Args().Slice()
			if len(args) == 1 && (args[0] == "--help" || args[0] == "-h") {
				return ucli.ShowCommandHelp(c.Lineage()[1], "channel") // help is shown by the parent
			}
			return runHostChannel(c, env, args)
		},
	}, false)
}

// channelExit carries the channel's exit code out through the CLI's one
// exit-code table: exit 3 as a refusal with the channel's code, exit 1 as
// a failure. Its message is the line the channel would have printed on
// stderr.
type channelExit struct {
	code    int
	refusal refusal.Code
	msg     string
}

func (e *channelExit) Error() string { return e.msg }

// RefusalCode makes exitCode report exit 3 with the channel's code; it is
// only consulted for refusals (see runHostChannel).
func (e *channelExit) RefusalCode() refusal.Code { return e.refusal }

func runHostChannel(c *ucli.Context, env *Env, args []string) error {
	var stdout, stderr bytes.Buffer
	code := channel.Main(c.Context, args, os.LookupEnv, env.Stdin, &stdout, &stderr, newLocalHost(env))
	if _, err := env.Stdout.Write(stdout.Bytes()); err != nil {
		return err
	}
	if code == channel.ExitOK {
		return nil
	}
	msg := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(stderr.String()), "stado host channel: "))
	if code == channel.ExitRefused {
		var doc channel.RefusalDocument
		if json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &doc) == nil && doc.Code != "" {
			return &channelExit{code: code, refusal: refusal.Code(doc.Code), msg: msg}
		}
		return &channelExit{code: code, refusal: "refused", msg: msg}
	}
	return errors.New(msg)
}
