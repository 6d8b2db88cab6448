package cli

// STUB: replaced by the rollout's commands.

import ucli "github.com/urfave/cli/v2"

func newReleaseVersionShowCommand(env *Env) *ucli.Command {
	return &ucli.Command{Name: "show", Hidden: true}
}
func newReleaseVersionConvergeCommand(env *Env) *ucli.Command {
	return &ucli.Command{Name: "converge", Hidden: true}
}
