package cli

// STUB: replaced by the release core's commands.

import ucli "github.com/urfave/cli/v2"

func newReleaseKeyGenerateCommand(env *Env) *ucli.Command {
	return &ucli.Command{Name: "generate", Hidden: true}
}
func newReleasePublishCommand(env *Env) *ucli.Command {
	return &ucli.Command{Name: "publish", Hidden: true}
}
func newReleasePruneCommand(env *Env) *ucli.Command {
	return &ucli.Command{Name: "prune", Hidden: true}
}
func newReleaseVersionSetCommand(env *Env) *ucli.Command {
	return &ucli.Command{Name: "set", Hidden: true}
}
