package channel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/register"
	"github.com/wisent/stado/registry"
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

var _ Host = (*Client)(nil)

// Connect returns a Connector over p.
func (p *Pool) Connect() Connector {
	return func(t registry.Target) Host { return &Client{Pool: p, Target: t} }
}

// OS is the OS the registry says the target runs.
func (c *Client) OS() string { return c.Target.OS }

// call runs cmd with stdin and decodes its result into out.
func (c *Client) call(ctx context.Context, cmd Command, stdin []byte, out any) error {
	raw, err := c.Pool.Call(ctx, c.Target, cmd, stdin)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return &RemoteError{Host: c.Target.Name, Stage: StageRemoteExit, Err: fmt.Errorf("decode %s result: %w", cmd.Verb, err)}
	}
	return nil
}

func unitCmd(verb Verb, u UnitRef) Command {
	return Command{Verb: verb, Scope: u.Scope, Units: []string{u.Unit}}
}

// Version implements Host. A host on another OS than the registry says is
// refused with os_mismatch.
func (c *Client) Version(ctx context.Context) (VersionResult, error) {
	var v VersionResult
	if err := c.call(ctx, Command{Verb: VerbVersion}, nil, &v); err != nil {
		return v, err
	}
	if c.Target.OS != "" && v.OS != c.Target.OS {
		return v, &RemoteError{Host: c.Target.Name, Stage: StageRemoteRefusal,
			Err: refusal.New(refusal.OSMismatch, "the registry says %s runs %s, and it runs %s", c.Target.Name, c.Target.OS, v.OS)}
	}
	return v, nil
}

// Ensure implements Host: the request document travels on stdin.
func (c *Client) Ensure(ctx context.Context, req EnsureRequest) (EnsureResult, error) {
	var res EnsureResult
	body, err := json.Marshal(req)
	if err != nil {
		return res, fmt.Errorf("encode ensure request: %w", err)
	}
	cmd := Command{Verb: VerbEnsure, Scope: req.Service.EffectiveScope(), Units: []string{req.Service.Unit}, Mode: req.Mode}
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
	var re *RemoteError
	var r *Refusal
	return errors.As(err, &re) && re.Stage == StageRemoteRefusal && !re.HostHas(CapEnsureServing) &&
		errors.As(err, &r) && r.Code == CodeInvalidContent
}

// UnitInstall implements Host.
func (c *Client) UnitInstall(ctx context.Context, req InstallRequest) (units.InstallResult, error) {
	var res units.InstallResult
	cmd := unitCmd(VerbUnitInstall, req.UnitRef)
	cmd.Path = req.Path
	err := c.call(ctx, cmd, req.Content, &res)
	return res, err
}

// UnitRemove implements Host.
func (c *Client) UnitRemove(ctx context.Context, req RemoveRequest) (RemoveResult, error) {
	var res RemoveResult
	cmd := unitCmd(VerbUnitRemove, req.UnitRef)
	cmd.Path = req.Path
	err := c.call(ctx, cmd, nil, &res)
	return res, err
}

func (c *Client) control(ctx context.Context, verb Verb, u UnitRef) (units.Verdict, error) {
	var v units.Verdict
	err := c.call(ctx, unitCmd(verb, u), nil, &v)
	return v, err
}

// UnitStart implements Host.
func (c *Client) UnitStart(ctx context.Context, u UnitRef) (units.Verdict, error) {
	return c.control(ctx, VerbUnitStart, u)
}

// UnitStop implements Host.
func (c *Client) UnitStop(ctx context.Context, u UnitRef) (units.Verdict, error) {
	return c.control(ctx, VerbUnitStop, u)
}

// UnitRestart implements Host.
func (c *Client) UnitRestart(ctx context.Context, u UnitRef) (units.Verdict, error) {
	return c.control(ctx, VerbUnitRestart, u)
}

// UnitShow implements Host. An answer with another number of verdicts than
// asked is a remote failure.
func (c *Client) UnitShow(ctx context.Context, req ShowRequest) (ShowResult, error) {
	var res ShowResult
	if err := c.call(ctx, Command{Verb: VerbUnitShow, Scope: req.Scope, Units: req.Units}, nil, &res); err != nil {
		return res, err
	}
	if len(res.Units) != len(req.Units) {
		return res, &RemoteError{Host: c.Target.Name, Stage: StageRemoteExit, Err: fmt.Errorf("unit-show answered %d verdicts for %d units", len(res.Units), len(req.Units))}
	}
	return res, nil
}

// UnitFile implements Host.
func (c *Client) UnitFile(ctx context.Context, u UnitRef) (FileResult, error) {
	var res FileResult
	err := c.call(ctx, unitCmd(VerbUnitFile, u), nil, &res)
	return res, err
}

// UnitLogs implements Host.
func (c *Client) UnitLogs(ctx context.Context, req LogsRequest) (LogsResult, error) {
	var res LogsResult
	cmd := unitCmd(VerbUnitLogs, req.UnitRef)
	cmd.Lines = req.Lines
	err := c.call(ctx, cmd, nil, &res)
	return res, err
}

// UnitEnv implements Host.
func (c *Client) UnitEnv(ctx context.Context, u UnitRef) (EnvResult, error) {
	var res EnvResult
	err := c.call(ctx, unitCmd(VerbUnitEnv, u), nil, &res)
	return res, err
}

// UnitList implements Host.
func (c *Client) UnitList(ctx context.Context, scope string) (ListResult, error) {
	var res ListResult
	err := c.call(ctx, Command{Verb: VerbUnitList, Scope: scope}, nil, &res)
	return res, err
}

// PortOwner implements Host.
func (c *Client) PortOwner(ctx context.Context, port int) (PortOwnerResult, error) {
	var res PortOwnerResult
	err := c.call(ctx, Command{Verb: VerbPortOwner, Port: port}, nil, &res)
	return res, err
}

// RepairStep implements Host.
func (c *Client) RepairStep(ctx context.Context, req StepRequest) (StepResult, error) {
	var res StepResult
	err := c.call(ctx, Command{Verb: VerbRepairStep, Step: req.Step, Env: req.Env}, nil, &res)
	return res, err
}

// Verify implements Host: the request document travels on stdin.
func (c *Client) Verify(ctx context.Context, req VerifyRequest) (VerifyResult, error) {
	var res VerifyResult
	body, err := json.Marshal(req)
	if err != nil {
		return res, fmt.Errorf("encode verify request: %w", err)
	}
	if err := c.call(ctx, Command{Verb: VerbVerify}, body, &res); err != nil {
		return res, err
	}
	if len(res.Units) != len(req.Services) {
		return res, &RemoteError{Host: c.Target.Name, Stage: StageRemoteExit, Err: fmt.Errorf("verify answered %d units for %d services", len(res.Units), len(req.Services))}
	}
	return res, nil
}

// Recoveries implements Host.
func (c *Client) Recoveries(ctx context.Context) (RecoveriesResult, error) {
	var res RecoveriesResult
	if err := c.call(ctx, Command{Verb: VerbRecoveries}, nil, &res); err != nil {
		return res, err
	}
	if res.Recoveries == nil {
		res.Recoveries = []register.Recovery{}
	}
	return res, nil
}
