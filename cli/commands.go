package cli

import (
	"errors"
	"fmt"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/registry"
)

// commands lists the top-level command groups. Each group lives in its own
// file (registry.go, catalog.go, service.go, host.go, ...).
func commands(env *Env) []*ucli.Command {
	return []*ucli.Command{
		newVersionCommand(env),
		newRegistryCommand(env),
		newCatalogCommand(env),
		newHostCommand(env),
		newStoreCommand(env),
		newServiceCommand(env),
		newResolverCommand(env),
		newRepairCommand(env),
	}
}

func asRefusal(err error, out **Refusal) bool { return errors.As(err, out) }

func asValidation(err error, out **registry.ValidationError) bool { return errors.As(err, out) }

func newVersionCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:      "version",
		Usage:     "print stado's version",
		UsageText: "stado version [--json]\n\nexample:\n   stado version --json",
		Action: func(c *ucli.Context) error {
			if env.JSON {
				return printJSON(env, map[string]string{"kind": "stado.version", "version": Version})
			}
			_, err := fmt.Fprintf(env.Stdout, "stado %s\n", Version)
			return err
		},
	}, true)
}
