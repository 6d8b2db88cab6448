package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/units"
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
	return &ucli.IntFlag{Name: "parallel", Value: channel.DefaultParallel, Usage: "hosts acted on at once"}
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

// hostSession is the host channel to one target for the life of one
// command: every call rides the pool's one connection to it.
type hostSession struct {
	pool   *channel.Pool
	target registry.Target
}

// call runs cmd and decodes its result into out (nil to discard).
func (s hostSession) call(ctx context.Context, cmd channel.Command, stdin []byte, out any) error {
	raw, err := s.pool.Call(ctx, s.target, cmd, stdin)
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return &channel.RemoteError{Host: s.target.Name, Stage: channel.StageRemoteExit, Err: fmt.Errorf("decode %s result: %w", cmd.Verb, err)}
	}
	return nil
}

// version asks the remote program who it is; it also names the login
// user's home, which places user units and launchd logs.
func (s hostSession) version(ctx context.Context) (VersionResult, error) {
	var v VersionResult
	if err := s.call(ctx, channel.Command{Verb: channel.VerbVersion}, nil, &v); err != nil {
		return v, err
	}
	if v.Protocol != channel.ProtocolVersion {
		return v, &channel.RemoteError{Host: s.target.Name, Stage: channel.StageRemoteExit,
			Err: fmt.Errorf("the remote stado %s speaks channel protocol %d, this one %d", v.Version, v.Protocol, channel.ProtocolVersion)}
	}
	if s.target.OS != "" && v.OS != s.target.OS {
		return v, &channel.RemoteError{Host: s.target.Name, Stage: channel.StageRemoteExit,
			Err: fmt.Errorf("the registry says %s runs %s, and it runs %s", s.target.Name, s.target.OS, v.OS)}
	}
	return v, nil
}

// show reads one unit's verdict and, when the host has one, its file.
func (s hostSession) show(ctx context.Context, scope, unit string) (units.Verdict, *UnitFile, error) {
	var res ShowResult
	if err := s.call(ctx, channel.Command{Verb: channel.VerbUnitShow, Scope: scope, Units: []string{unit}}, nil, &res); err != nil {
		return units.Verdict{}, nil, err
	}
	if len(res.Units) != 1 {
		return units.Verdict{}, nil, &channel.RemoteError{Host: s.target.Name, Stage: channel.StageRemoteExit, Err: fmt.Errorf("unit-show answered %d verdicts for one unit", len(res.Units))}
	}
	return res.Units[0], res.File, nil
}

// control runs unit-start, unit-stop or unit-restart and returns the
// verdict the host read after it.
func (s hostSession) control(ctx context.Context, verb channel.Verb, scope, unit string) (units.Verdict, error) {
	var v units.Verdict
	err := s.call(ctx, channel.Command{Verb: verb, Scope: scope, Units: []string{unit}}, nil, &v)
	return v, err
}

// HostError is the JSON form of one host's failure: which host, at which
// stage (connect, auth, host_key, remote_refusal, remote_exit; plan for a
// refusal decided before any connection, registry for the registry write),
// the remote exit status and stderr tail where there was one, and the
// machine code the exit-code table gives it.
type HostError struct {
	Host       string `json:"host"`
	Address    string `json:"address,omitempty"`
	Stage      string `json:"stage"`
	ExitStatus int    `json:"exit_status,omitempty"`
	StderrTail string `json:"stderr_tail,omitempty"`
	Code       string `json:"code"`
	Exit       int    `json:"exit"`
	Message    string `json:"message"`
}

// Stages of a failure that never reached a host.
const (
	stagePlan     = "plan"     // refused from the registry and catalog alone
	stageRegistry = "registry" // the registry write failed
)

// stagedError is a local failure with the stage it happened at.
type stagedError struct {
	host  string
	stage string
	err   error
}

func (e *stagedError) Error() string { return e.host + ": " + e.err.Error() }
func (e *stagedError) Unwrap() error { return e.err }

// failingError is a unit that does not run after ensure started it.
type failingError struct {
	host    string
	verdict units.Verdict
}

func (e *failingError) Error() string {
	msg := fmt.Sprintf("%s: %s is %s after its start", e.host, e.verdict.Unit, e.verdict.State)
	if e.verdict.Sentence != "" {
		msg += ": " + e.verdict.Sentence
	} else if e.verdict.Starts > 0 {
		msg += fmt.Sprintf(": last exit %d, started %d time(s)", e.verdict.LastExit, e.verdict.Starts)
	}
	return msg
}

// describeHostError is err as a HostError of host.
func describeHostError(host string, err error) *HostError {
	if err == nil {
		return nil
	}
	exit, code := exitCode(err)
	he := &HostError{Host: host, Code: code, Exit: exit, Message: err.Error()}
	var re *channel.RemoteError
	var se *stagedError
	var fe *failingError
	switch {
	case errors.As(err, &re):
		he.Stage, he.Address, he.ExitStatus, he.StderrTail = string(re.Stage), re.Address, re.ExitStatus, re.StderrTail
	case errors.As(err, &se):
		he.Stage = se.stage
	case errors.As(err, &fe):
		he.Stage, he.Code = "confirm", "failing"
	default:
		he.Stage = stagePlan
	}
	return he
}

// hostPrefixed makes sure a message starts with the host's name.
func hostPrefixed(host string, err error) string {
	msg := err.Error()
	if strings.HasPrefix(msg, host+":") {
		return msg
	}
	return host + ": " + msg
}

// fanOutError is the error a command acting on many hosts ends with: nil
// when every host succeeded; a failure (exit 1) when any host failed;
// otherwise the first refusal (exit 3) with its code.
func fanOutError(what string, errs map[string]error, order []string) error {
	var firstFail, firstRefusal error
	failed := 0
	for _, h := range order {
		err := errs[h]
		if err == nil {
			continue
		}
		failed++
		if exit, _ := exitCode(err); exit == ExitFailure {
			if firstFail == nil {
				firstFail = err
			}
		} else if firstRefusal == nil {
			firstRefusal = err
		}
	}
	switch {
	case failed == 0:
		return nil
	case firstFail != nil:
		return fmt.Errorf("%s: %d of %d host(s) failed; first: %w", what, failed, len(order), firstFail)
	case failed == 1:
		return firstRefusal
	default:
		_, code := exitCode(firstRefusal)
		return &Refusal{Code: refusal.Code(code), Message: fmt.Sprintf("%s: %d of %d host(s) refused; first: %s", what, failed, len(order), firstRefusal), Err: firstRefusal}
	}
}

// poll is the interval between unit reads while a start is confirmed.
const pollInterval = 200 * time.Millisecond

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
