package cli

import ucli "github.com/urfave/cli/v2"

// newReleaseCommand is the release flow's group: keys and publishing
// (release_publish.go), the declared versions and their rollout
// (release_rollout.go).
func newReleaseCommand(env *Env) *ucli.Command {
	return &ucli.Command{
		Name:  "release",
		Usage: "publish signed product builds and bring hosts to the declared versions (docs/release.md)",
		Subcommands: []*ucli.Command{
			{
				Name:        "key",
				Usage:       "manage release signing keys",
				Subcommands: []*ucli.Command{newReleaseKeyGenerateCommand(env)},
			},
			newReleasePublishCommand(env),
			newReleasePruneCommand(env),
			{
				Name:  "version",
				Usage: "the versions the registry declares and the versions hosts run",
				Subcommands: []*ucli.Command{
					newReleaseVersionSetCommand(env),
					newReleaseVersionShowCommand(env),
					newReleaseVersionConvergeCommand(env),
				},
			},
		},
	}
}
