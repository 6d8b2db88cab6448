package cli

import (
	ucli "github.com/urfave/cli/v2"

	// Store backends beyond the file store register with store.Open.
	_ "github.com/wisent/stado/store/etcdstore"
)

// commands lists the command tree. Each group lives in its own file
// (registry.go, catalog.go, service_read.go and service_write.go, ...).
func commands(env *Env) []*ucli.Command {
	return []*ucli.Command{
		newVersionCommand(env),
		newRegistryCommand(env),
		newCatalogCommand(env),
		{
			Name:  "host",
			Usage: "commands that act on the host they run on (the SSH channel's remote program wraps them)",
			Subcommands: []*ucli.Command{
				newHostUnitCommand(env),
				newHostChannelCommand(env),
				newHostKeeperCommand(env),
				newHostRunCommand(env),
				newHostHealthCommand(env),
				newHostUnlockStoreCommand(env),
				newHostBootstrapCommand(env),
			},
		},
		newStoreCommand(env),
		{
			Name:        "service",
			Usage:       "read and change the fleet's declared services",
			Subcommands: append(serviceReadCommands(env), serviceWriteCommands(env)...),
		},
		newResolverCommand(env),
		newRepairCommand(env),
		newOptimizeCommand(env),
		newDesktopCommand(env),
		newReleaseCommand(env),
		newCompletionCommand(env),
		newCompleteCommand(env),
		newManCommand(env),
	}
}

func newVersionCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:      "version",
		Usage:     "print stado's version",
		UsageText: "stado version [--json]\n\nexample:\n   stado version --json",
		Action: func(c *ucli.Context) error {
			return emit(env, "stado.version", map[string]string{"version": Version, "commit": Commit}, func(t *text) { t.f("stado %s (commit %s)\n", Version, Commit) })
		},
	}, true)
}
