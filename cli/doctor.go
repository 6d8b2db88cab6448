package cli

import (
	"context"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/beacon"
)

type doctorOptions struct {
	StaleAfter time.Duration
}

func newRegistryDoctorCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "doctor",
		Usage: "diff every host's declarations against its beacon; exit 3 when anything needs attention (no SSH)",
		UsageText: "stado registry doctor [--stale-after DURATION] [--json]\n\n" +
			"Reports declared-but-missing, failing and failed units, undeclared loaded units, incomplete\n" +
			"declarations, stale or absent beacons, unsuccessful answers and refusals the hosts met.\n\n" +
			"example:\n   stado registry doctor --json",
		Flags: []ucli.Flag{staleFlag()},
		Action: func(c *ucli.Context) error {
			return runRegistryDoctor(c.Context, env, doctorOptions{StaleAfter: c.Duration("stale-after")})
		},
	}, true)
}

// errNeedsAttention makes doctor exit 3 after printing its findings.
var errNeedsAttention = &Refusal{Code: "needs_attention", Message: "the fleet needs attention"}

func runRegistryDoctor(ctx context.Context, env *Env, o doctorOptions) error {
	v, err := loadView(ctx, env, o.StaleAfter)
	if err != nil {
		return err
	}
	fs := v.Doctor()
	if env.JSON {
		if fs == nil {
			fs = []beacon.Finding{}
		}
		if err := printJSON(env, map[string]any{"kind": "stado.registry.doctor", "registry_revision": v.Meta.Revision, "at": v.Now.UTC(), "ok": len(fs) == 0, "findings": fs}); err != nil {
			return err
		}
	} else {
		rows := make([][]string, 0, len(fs))
		for _, f := range fs {
			name := f.Service
			if name == "" {
				name = f.Unit
			}
			rows = append(rows, []string{f.Host, dash(name), f.Code, f.Message})
		}
		if len(rows) == 0 {
			env.Stdout.Write([]byte("ok: every declaration matches its host's fresh beacon\n"))
		} else {
			printTable(env.Stdout, terminalWidth(env), []string{"HOST", "SERVICE", "FINDING", "DETAIL"}, rows)
		}
	}
	if len(fs) > 0 {
		return errNeedsAttention
	}
	return nil
}
