package cli

import (
	ucli "github.com/urfave/cli/v2"
)

// newServiceCommand groups the service commands: the read half (list,
// status, show) in service_read.go and the write half in service_write.go.
func newServiceCommand(env *Env) *ucli.Command {
	return &ucli.Command{
		Name:  "service",
		Usage: "read and change the fleet's declared services",
		Subcommands: append(
			serviceReadCommands(env),
			serviceWriteCommands(env)...,
		),
	}
}
