package sshclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/register"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/release"
	"github.com/wisent/stado/units"
)

// Client is the SSH end of Host: each verb is one execution of the remote
// program on Target over Pool's connection, its arguments validated here
// first (a *Refusal, nothing sent) and its result decoded into the verb's
// typed result. A Client is safe for concurrent use.
type Client struct {
	Pool   *Pool
	Target registry.Target
}

var _ channel.Host = (*Client)(nil)

// Connect returns a Connector over p.
func (p *Pool) Connect() channel.Connector {
	return func(t registry.Target) channel.Host { return &Client{Pool: p, Target: t} }
}

// OS is the OS the registry says the target runs.
func (c *Client) OS() string { return c.Target.OS }

// call runs cmd with stdin and decodes its result into out.
func (c *Client) call(ctx context.Context, cmd channel.Command, stdin []byte, out any) error {
	raw, err := c.Pool.Call(ctx, c.Target, cmd, stdin)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return &channel.RemoteError{Host: c.Target.Name, Stage: channel.StageRemoteExit, Err: fmt.Errorf("decode %s result: %w", cmd.Verb, err)}
	}
	return nil
}

func unitCmd(verb channel.Verb, u channel.UnitRef) channel.Command {
	return channel.Command{Verb: verb, Scope: u.Scope, Units: []string{u.Unit}, Domain: u.Domain}
}

// Version implements Host. A host on another OS than the registry says is
// refused with os_mismatch.
func (c *Client) Version(ctx context.Context) (channel.VersionResult, error) {
	var v channel.VersionResult
	if err := c.call(ctx, channel.Command{Verb: channel.VerbVersion}, nil, &v); err != nil {
		return v, err
	}
	if c.Target.OS != "" && v.OS != c.Target.OS {
		return v, &channel.RemoteError{Host: c.Target.Name, Stage: channel.StageRemoteRefusal,
			Err: refusal.New(refusal.OSMismatch, "the registry says %s runs %s, and it runs %s", c.Target.Name, c.Target.OS, v.OS)}
	}
	return v, nil
}

// Ensure implements Host: the request document travels on stdin.
func (c *Client) Ensure(ctx context.Context, req channel.EnsureRequest) (channel.EnsureResult, error) {
	var res channel.EnsureResult
	body, err := json.Marshal(req)
	if err != nil {
		return res, fmt.Errorf("encode ensure request: %w", err)
	}
	cmd := channel.Command{Verb: channel.VerbEnsure, Scope: req.Service.EffectiveScope(), Units: []string{req.Service.Unit}, Mode: req.Mode}
	err = c.call(ctx, cmd, body, &res)
	if req.Serving != nil && predatesServing(err) {
		// A host whose stado predates the serving read in ensure refuses
		// the field before doing anything: ask again without it, and the
		// write half reads the port itself.
		req.Serving = nil
		return c.Ensure(ctx, req)
	}
	return res, err
}

// predatesServing reports whether err is the host refusing an ensure
// request's content while advertising no CapEnsureServing: a stado older
// than the serving field, which refuses it as an unknown field. The
// refusal's message is never read. A host that has the capability and
// refuses the content refuses it for another reason; asking again would
// not help.
func predatesServing(err error) bool {
	var re *channel.RemoteError
	var r *channel.Refusal
	return errors.As(err, &re) && re.Stage == channel.StageRemoteRefusal && !re.HostHas(channel.CapEnsureServing) &&
		errors.As(err, &r) && r.Code == channel.CodeInvalidContent
}

// UnitInstall implements Host.
func (c *Client) UnitInstall(ctx context.Context, req channel.InstallRequest) (units.InstallResult, error) {
	var res units.InstallResult
	cmd := unitCmd(channel.VerbUnitInstall, req.UnitRef)
	cmd.Path = req.Path
	err := c.call(ctx, cmd, req.Content, &res)
	return res, err
}

// UnitRemove implements Host.
func (c *Client) UnitRemove(ctx context.Context, req channel.RemoveRequest) (channel.RemoveResult, error) {
	var res channel.RemoveResult
	cmd := unitCmd(channel.VerbUnitRemove, req.UnitRef)
	cmd.Path = req.Path
	err := c.call(ctx, cmd, nil, &res)
	return res, c.domainRefused(cmd, err)
}

func (c *Client) control(ctx context.Context, verb channel.Verb, u channel.UnitRef) (units.Verdict, error) {
	var v units.Verdict
	cmd := unitCmd(verb, u)
	err := c.call(ctx, cmd, nil, &v)
	return v, c.domainRefused(cmd, err)
}

// domainRefused names what happened when a host refused the arguments of
// a unit verb that carried a launchd domain while advertising no
// CapUnitDomain: its stado predates the word and cannot act in that
// domain. It is not asked again without the domain, which would act in
// another one. Any other err is returned as it is.
func (c *Client) domainRefused(cmd channel.Command, err error) error {
	var re *channel.RemoteError
	var r *channel.Refusal
	if cmd.Domain == "" || !errors.As(err, &re) || re.Stage != channel.StageRemoteRefusal || re.HostHas(channel.CapUnitDomain) ||
		!errors.As(err, &r) || r.Code != channel.CodeInvalidArguments {
		return err
	}
	return &channel.RemoteError{Host: c.Target.Name, Stage: channel.StageRemoteRefusal, Capabilities: re.Capabilities, ExitStatus: re.ExitStatus,
		Err: &refusal.Error{Code: refusal.InvalidScope,
			Message: fmt.Sprintf("stado on %s predates launchd domains on %s, so it cannot act on %s in the declared domain %s", c.Target.Name, cmd.Verb, cmd.Unit(), cmd.Domain),
			Hint:    "upgrade stado on the host (stado release version converge), then run this again"}}
}

// UnitStart implements Host.
func (c *Client) UnitStart(ctx context.Context, u channel.UnitRef) (units.Verdict, error) {
	return c.control(ctx, channel.VerbUnitStart, u)
}

// UnitStop implements Host.
func (c *Client) UnitStop(ctx context.Context, u channel.UnitRef) (units.Verdict, error) {
	return c.control(ctx, channel.VerbUnitStop, u)
}

// UnitRestart implements Host.
func (c *Client) UnitRestart(ctx context.Context, u channel.UnitRef) (units.Verdict, error) {
	return c.control(ctx, channel.VerbUnitRestart, u)
}

// UnitShow implements Host. An answer with another number of verdicts than
// asked is a remote failure.
func (c *Client) UnitShow(ctx context.Context, req channel.ShowRequest) (channel.ShowResult, error) {
	var res channel.ShowResult
	if err := c.call(ctx, channel.Command{Verb: channel.VerbUnitShow, Scope: req.Scope, Units: req.Units}, nil, &res); err != nil {
		return res, err
	}
	if len(res.Units) != len(req.Units) {
		return res, &channel.RemoteError{Host: c.Target.Name, Stage: channel.StageRemoteExit, Err: fmt.Errorf("unit-show answered %d verdicts for %d units", len(res.Units), len(req.Units))}
	}
	return res, nil
}

// UnitFile implements Host.
func (c *Client) UnitFile(ctx context.Context, u channel.UnitRef) (channel.FileResult, error) {
	var res channel.FileResult
	err := c.call(ctx, unitCmd(channel.VerbUnitFile, u), nil, &res)
	return res, err
}

// UnitLogs implements Host.
func (c *Client) UnitLogs(ctx context.Context, req channel.LogsRequest) (channel.LogsResult, error) {
	var res channel.LogsResult
	cmd := unitCmd(channel.VerbUnitLogs, req.UnitRef)
	cmd.Lines = req.Lines
	err := c.call(ctx, cmd, nil, &res)
	return res, err
}

// UnitEnv implements Host.
func (c *Client) UnitEnv(ctx context.Context, u channel.UnitRef) (channel.EnvResult, error) {
	var res channel.EnvResult
	err := c.call(ctx, unitCmd(channel.VerbUnitEnv, u), nil, &res)
	return res, err
}

// UnitList implements Host.
func (c *Client) UnitList(ctx context.Context, scope string) (channel.ListResult, error) {
	var res channel.ListResult
	err := c.call(ctx, channel.Command{Verb: channel.VerbUnitList, Scope: scope}, nil, &res)
	return res, err
}

// PortOwner implements Host.
func (c *Client) PortOwner(ctx context.Context, port int) (channel.PortOwnerResult, error) {
	var res channel.PortOwnerResult
	err := c.call(ctx, channel.Command{Verb: channel.VerbPortOwner, Port: port}, nil, &res)
	return res, err
}

// RepairStep implements Host.
func (c *Client) RepairStep(ctx context.Context, req channel.StepRequest) (channel.StepResult, error) {
	var res channel.StepResult
	err := c.call(ctx, channel.Command{Verb: channel.VerbRepairStep, Step: req.Step, Env: req.Env}, nil, &res)
	return res, err
}

// Verify implements Host: the request document travels on stdin.
func (c *Client) Verify(ctx context.Context, req channel.VerifyRequest) (channel.VerifyResult, error) {
	var res channel.VerifyResult
	body, err := json.Marshal(req)
	if err != nil {
		return res, fmt.Errorf("encode verify request: %w", err)
	}
	if err := c.call(ctx, channel.Command{Verb: channel.VerbVerify}, body, &res); err != nil {
		return res, err
	}
	if len(res.Units) != len(req.Services) {
		return res, &channel.RemoteError{Host: c.Target.Name, Stage: channel.StageRemoteExit, Err: fmt.Errorf("verify answered %d units for %d services", len(res.Units), len(req.Services))}
	}
	return res, nil
}

// Recoveries implements Host.
func (c *Client) Recoveries(ctx context.Context) (channel.RecoveriesResult, error) {
	var res channel.RecoveriesResult
	if err := c.call(ctx, channel.Command{Verb: channel.VerbRecoveries}, nil, &res); err != nil {
		return res, err
	}
	if res.Recoveries == nil {
		res.Recoveries = []register.Recovery{}
	}
	return res, nil
}

// ReleaseActivate implements Host: the request document on stdin.
func (c *Client) ReleaseActivate(ctx context.Context, req release.ActivateRequest) (release.ActivateResult, error) {
	var res release.ActivateResult
	body, err := json.Marshal(req)
	if err != nil {
		return res, err
	}
	err = c.call(ctx, channel.Command{Verb: channel.VerbReleaseActivate}, body, &res)
	return res, err
}

// ReleaseState implements Host: the request document on stdin; reads only.
func (c *Client) ReleaseState(ctx context.Context, req release.StateRequest) (release.StateResult, error) {
	var res release.StateResult
	body, err := json.Marshal(req)
	if err != nil {
		return res, err
	}
	err = c.call(ctx, channel.Command{Verb: channel.VerbReleaseState}, body, &res)
	return res, err
}
