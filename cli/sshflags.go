package cli

import (
	"context"
	"encoding/json"
	"fmt"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/registry"
)

// sshFlags are the flags of every command that opens the host channel.
func sshFlags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.StringFlag{Name: "known-hosts", Usage: "known_hosts file (default ~/.ssh/known_hosts)", EnvVars: []string{"STADO_KNOWN_HOSTS"}},
		&ucli.StringSliceFlag{Name: "identity", Usage: "private key file to try (repeatable)", EnvVars: []string{"STADO_SSH_IDENTITY"}},
		&ucli.StringFlag{Name: "ssh-config", Usage: "ssh_config read for target names (default ~/.ssh/config)", EnvVars: []string{"STADO_SSH_CONFIG"}},
		&ucli.BoolFlag{Name: "accept-new-host-key", Usage: "record an unknown host key instead of refusing it (a changed key is always refused)"},
		&ucli.DurationFlag{Name: "connect-timeout", Usage: "bound on connect, handshake and authentication (default 10s)"},
	}
}

// parallelFlag bounds the fan-out of commands that act on many hosts.
func parallelFlag() ucli.Flag {
	return &ucli.IntFlag{Name: "parallel", Value: 16, Usage: "hosts acted on at once"}
}

// dialerFrom builds the channel dialer the ssh flags name.
func dialerFrom(c *ucli.Context) *channel.Dialer {
	return &channel.Dialer{
		KnownHostsPath:   c.String("known-hosts"),
		IdentityFiles:    c.StringSlice("identity"),
		SSHConfigPath:    c.String("ssh-config"),
		AcceptNewHostKey: c.Bool("accept-new-host-key"),
		ConnectTimeout:   c.Duration("connect-timeout"),
	}
}

// readServiceLogs reads the last lines of a declared service's log over the
// host channel.
func readServiceLogs(ctx context.Context, d *channel.Dialer, t registry.Target, s registry.Service, lines int) ([]string, error) {
	pool := channel.NewPool(d)
	defer pool.Close()
	res, err := pool.Call(ctx, t, channel.Command{Verb: channel.VerbUnitLogs, Scope: s.EffectiveScope(), Units: []string{s.Unit}, Lines: lines}, nil)
	if err != nil {
		return nil, err
	}
	return decodeLogLines(res)
}

// decodeLogLines reads a unit-logs result: {"lines": [...]} or a bare list.
func decodeLogLines(res json.RawMessage) ([]string, error) {
	var doc struct {
		Lines []string `json:"lines"`
	}
	if err := json.Unmarshal(res, &doc); err == nil && doc.Lines != nil {
		return doc.Lines, nil
	}
	var lines []string
	if err := json.Unmarshal(res, &lines); err != nil {
		return nil, fmt.Errorf("decode unit-logs result: %w", err)
	}
	return lines, nil
}
