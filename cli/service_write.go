package cli

import ucli "github.com/urfave/cli/v2"

// serviceWriteCommands are the service commands that act on hosts over the
// host channel and change declarations through registry.Update.
func serviceWriteCommands(env *Env) []*ucli.Command {
	return nil
}
