package cli

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/beacon"
)

type healthOptions struct {
	Host       string
	StaleAfter time.Duration
}

func newHostHealthCommand(env *Env) *ucli.Command {
	return withShared(env, &ucli.Command{
		Name:  "health",
		Usage: "per host: beacon age, pass, version, counts by verdict and refusals (no SSH)",
		UsageText: "stado host health [--host HOST] [--stale-after DURATION] [--json]\n\n" +
			"example:\n   stado host health --json",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "host", Usage: "only this host"},
			staleFlag(),
		},
		Action: func(c *ucli.Context) error {
			return runHostHealth(c.Context, env, healthOptions{Host: c.String("host"), StaleAfter: c.Duration("stale-after")})
		},
	}, true)
}

func runHostHealth(ctx context.Context, env *Env, o healthOptions) error {
	v, err := loadView(ctx, env, o.StaleAfter)
	if err != nil {
		return err
	}
	hs := v.Health(o.Host)
	if o.Host != "" && len(hs) == 0 {
		return refuse("not_found", "no host %q in the registry or the beacons", o.Host)
	}
	if env.JSON {
		if hs == nil {
			hs = []beacon.HostHealth{}
		}
		return printJSON(env, map[string]any{"kind": "stado.host.health", "at": v.Now.UTC(), "hosts": hs})
	}
	rows := make([][]string, 0, len(hs))
	for _, h := range hs {
		age := "-"
		if h.Beacon.At != nil {
			age = fmt.Sprintf("%.0fs", h.Beacon.AgeSeconds)
		}
		state := "fresh"
		switch {
		case !h.Beacon.Present:
			state = "absent"
		case h.Beacon.Stale:
			state = "stale"
		}
		var refs []string
		for _, r := range h.Refusals {
			refs = append(refs, r.Code)
		}
		rows = append(rows, []string{h.Host, state, age, passText(h.Beacon.Pass), dash(h.StadoVersion), countsText(h.Counts), fmt.Sprint(h.Undeclared), strings.Join(refs, ",")})
	}
	printTable(env.Stdout, terminalWidth(env), []string{"HOST", "BEACON", "AGE", "PASS", "VERSION", "UNITS", "UNDECLARED", "REFUSALS"}, rows)
	for _, h := range hs {
		for _, pr := range h.PeerRecoveries {
			fmt.Fprintf(env.Stdout, "%s saw %s\n", h.Host, peerSummary(pr))
		}
	}
	return nil
}

func passText(p int64) string {
	if p == 0 {
		return "-"
	}
	return fmt.Sprint(p)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func countsText(m map[string]int) string {
	if len(m) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

// peerSummary is the one-line form of a peer recovery block.
func peerSummary(pr beacon.PeerRecovery) string {
	what := fmt.Sprintf("%s on %s", pr.Service, pr.Host)
	switch {
	case pr.Unreadable != "":
		return "its waiting list unreadable: " + pr.Unreadable
	case pr.NotRecovered != "":
		return what + " standing, not recovered: " + pr.NotRecovered
	case pr.AlreadyRecovered:
		return fmt.Sprintf("%s still standing (%d held, %.0fs), already_recovered", what, pr.Held, pr.WaitedSeconds)
	case len(pr.Recovery) > 0:
		s := fmt.Sprintf("%s standing (%d held, %.0fs > %.0fs): recovery attempted", what, pr.Held, pr.WaitedSeconds, pr.BoundSeconds)
		if pr.RecordingRefusal != nil {
			s += "; recording_refusal: " + pr.RecordingRefusal.Cause
		}
		return s
	}
	return what + " standing"
}
