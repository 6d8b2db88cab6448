package cli

import (
	"fmt"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/release"
)

// needFlags refuses a command line that leaves out one of names (exit 2).
func needFlags(c *ucli.Context, names ...string) error {
	for _, n := range names {
		if !c.IsSet(n) || fmt.Sprint(c.Value(n)) == "" {
			return usagef("%s needs --%s", c.Command.FullName(), n)
		}
	}
	return nil
}

// The release core's commands: keys, publish, prune and the declared
// versions. Each parses its flags and makes one call into package release.

func newReleaseKeyGenerateCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "generate",
		Usage: "write a new minisign key pair (NAME.pub to pin on hosts, NAME.key to sign with)",
		UsageText: "stado release key generate --out DIR [--name NAME] [--json]\n\n" +
			"The private key is encrypted with $" + release.PasswordEnv + " (never a flag);\n" +
			"left empty, the key is written unencrypted. An existing key is never overwritten.\n\n" +
			"example:\n   STADO_RELEASE_KEY_PASSWORD=... stado release key generate --out ~/.stado/keys",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "out", Usage: "directory to write the pair into"},
			&ucli.StringFlag{Name: "name", Usage: "file name of the pair, without .pub/.key", Value: release.DefaultKeyName},
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() != 0 {
				return usagef("release key generate takes no arguments, got %q", c.Args().Slice())
			}
			if err := needFlags(c, "out"); err != nil {
				return err
			}
			password := env.Getenv(release.PasswordEnv)
			pub, key, err := release.GenerateKey(c.String("out"), c.String("name"), password)
			if err != nil {
				return err
			}
			pk, err := release.LoadPublicKey(pub)
			if err != nil {
				return err
			}
			res := release.KeyGenerated{PublicKey: pub, PrivateKey: key, KeyID: release.KeyID(pk.ID()), Encrypted: password != ""}
			return emit(env, "stado.release.key", res, func(t *text) { t.lines(res.Lines()) })
		},
	}, true)
}

func newReleasePublishCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:      "publish",
		Usage:     "sign a build and store it, chunked and content-addressed",
		ArgsUsage: "PRODUCT VERSION FILE",
		UsageText: "stado release publish PRODUCT VERSION FILE --os OS --arch ARCH --key KEYFILE [--reason TEXT] [--json]\n\n" +
			"An encrypted key opens with $" + release.PasswordEnv + ". Publishing the same bytes\n" +
			"again changes nothing; other bytes under a published version are refused (conflict).\n\n" +
			"example:\n   stado release publish brama 1.4.3 ./brama --os linux --arch amd64 --key ~/.stado/keys/stado-release.key",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "os", Usage: "the build's OS as GOOS spells it (linux, darwin)"},
			&ucli.StringFlag{Name: "arch", Usage: "the build's architecture as GOARCH spells it (amd64, arm64)"},
			&ucli.StringFlag{Name: "key", Usage: "minisign private key file to sign with"},
			&ucli.StringFlag{Name: "reason", Usage: "why this build is published, kept in its manifest"},
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() != 3 {
				return usagef("release publish takes PRODUCT VERSION FILE, got %d argument(s)", c.NArg())
			}
			if err := needFlags(c, "os", "arch", "key"); err != nil {
				return err
			}
			a := c.Args().Slice()
			data, err := release.ReadImage(a[2])
			if err != nil {
				return err
			}
			key, err := release.LoadPrivateKey(c.String("key"), env.Getenv(release.PasswordEnv))
			if err != nil {
				return err
			}
			st, err := openStore(c.Context, env)
			if err != nil {
				return err
			}
			defer st.Close()
			res, err := release.Publish(c.Context, st, release.PublishRequest{Product: a[0], Version: a[1], OS: c.String("os"), Arch: c.String("arch"),
				Data: data, Key: key, Reason: c.String("reason"), Now: env.Now()})
			if err != nil {
				return err
			}
			return emit(env, "stado.release.publish", res, func(t *text) { t.lines(res.Lines()) })
		},
	}, true)
}

func newReleasePruneCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "prune",
		Usage: "delete all but the newest N versions of each product, and the chunks only they held",
		UsageText: "stado release prune --keep N [--dry-run] [--json]\n\n" +
			"Never deletes a version the registry declares (fleet-wide or on any target),\n" +
			"nor an image a host's beacon records as its active or backup image.\n\n" +
			"example:\n   stado release prune --keep 3 --dry-run",
		Flags: []ucli.Flag{
			&ucli.IntFlag{Name: "keep", Usage: "versions to keep per product and os/arch, at least 1"},
			&ucli.BoolFlag{Name: "dry-run", Usage: "say what would be deleted and delete nothing"},
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() != 0 {
				return usagef("release prune takes no arguments, got %q", c.Args().Slice())
			}
			if err := needFlags(c, "keep"); err != nil {
				return err
			}
			st, err := openStore(c.Context, env)
			if err != nil {
				return err
			}
			defer st.Close()
			p, err := release.FleetProtection(c.Context, st)
			if err != nil {
				return err
			}
			res, err := release.Prune(c.Context, st, release.PruneRequest{Keep: c.Int("keep"), Protected: p.Protected, DryRun: c.Bool("dry-run")})
			if err != nil {
				return err
			}
			return emit(env, "stado.release.prune", res, func(t *text) { t.lines(res.Lines()) })
		},
	}, true)
}

func newReleaseVersionSetCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:      "set",
		Usage:     "declare the version of a product the fleet (or one host) runs, as a registry revision",
		ArgsUsage: "PRODUCT [VERSION]",
		UsageText: "stado release version set PRODUCT VERSION [--host H] [--pin] --reason TEXT [--json]\n" +
			"stado release version set PRODUCT --clear [--host H] --reason TEXT [--json]\n\n" +
			"Only a version published for some os/arch can be declared. --pin allows hosts\n" +
			"to go to it even when it is older than the version they run.\n\n" +
			"example:\n   stado release version set brama 1.4.3 --reason \"ship the fix\"\n" +
			"   stado release version set brama 1.4.2 --host host3 --pin --reason \"hold host3 back\"",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "host", Usage: "set the entry of this target only (default: fleet-wide)"},
			&ucli.BoolFlag{Name: "pin", Usage: "exactly this version, even older than a host's active one"},
			&ucli.BoolFlag{Name: "clear", Usage: "remove the entry instead of setting it"},
			&ucli.StringFlag{Name: "reason", Usage: "why, kept in the registry history"},
		},
		Action: func(c *ucli.Context) error {
			if err := needFlags(c, "reason"); err != nil {
				return err
			}
			a := c.Args().Slice()
			req := release.DeclareRequest{Host: c.String("host"), Pin: c.Bool("pin"), Clear: c.Bool("clear"), Reason: c.String("reason")}
			switch {
			case req.Clear && req.Pin:
				return usagef("--clear and --pin exclude each other")
			case len(a) == 2:
				req.Product, req.Version = a[0], a[1]
			case len(a) == 1 && req.Clear:
				req.Product = a[0]
			default:
				return usagef("release version set takes PRODUCT VERSION (or PRODUCT --clear), got %d argument(s)", len(a))
			}
			st, err := openStore(c.Context, env)
			if err != nil {
				return err
			}
			defer st.Close()
			res, err := release.Declare(c.Context, st, req)
			if err != nil && res.Revision == 0 {
				return err
			}
			if perr := emit(env, "stado.release.version.set", res, func(t *text) { t.lines(res.Lines()) }); perr != nil {
				return perr
			}
			return err
		},
	}, true)
}
