package cli

import (
	ucli "github.com/urfave/cli/v2"
)

// newHostCommand is the group of commands that run on a host itself: the
// SSH channel's remote program wraps them, and an operator may run them
// locally.
func newHostCommand(env *Env) *ucli.Command {
	return &ucli.Command{
		Name:  "host",
		Usage: "commands that act on the host they run on",
		Subcommands: []*ucli.Command{
			newHostUnitCommand(env),
			newHostChannelCommand(env),
			newHostRunCommand(env),
			newHostHealthCommand(env),
		},
	}
}
