package fleet

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/units"
)

// Bounds and defaults of a serving wait.
const (
	DefaultServingTimeout = 30 * time.Second
	MaxServingTimeout     = 30 * time.Minute
	DefaultServingPoll    = 250 * time.Millisecond
	// DefaultServingSettle is how long the unit must keep listening on the
	// same other port(s), and not on its own, before the wait refuses it
	// as settled elsewhere.
	DefaultServingSettle = 2 * time.Second
)

// ServingOptions say which declared service to wait for, where, how long.
type ServingOptions struct {
	Name    string
	Host    string
	Timeout time.Duration // <= 0: DefaultServingTimeout
	Poll    time.Duration // <= 0: DefaultServingPoll
	Settle  time.Duration // <= 0: DefaultServingSettle
	// Now and After are the wait's clock; nil means the real one.
	Now   func() time.Time                       `json:"-"`
	After func(d time.Duration) <-chan time.Time `json:"-"`
}

// ServingResult is what a serving read found: the unit's process tree
// listening on the directory port at the declared address (Serving), or
// the evidence of why not.
type ServingResult struct {
	Host    string `json:"host"`
	Service string `json:"service"`
	Unit    string `json:"unit"`
	Serving bool   `json:"serving"`
	// Port and Address are the directory's; Listen is the socket found
	// ("127.0.1.2:8080"), PID and Program its owner.
	Port    int    `json:"port"`
	Address string `json:"address"`
	Listen  string `json:"listen,omitempty"`
	PID     int    `json:"pid,omitempty"`
	Program string `json:"program,omitempty"`
	// Verdict is the unit's last reading.
	Verdict units.Verdict `json:"verdict"`
	// ExitCode and StderrLine are the last run's exit and the last line the
	// program wrote, when its process exited.
	ExitCode   *int   `json:"exit_code,omitempty"`
	StderrLine string `json:"stderr_line,omitempty"`
	// OtherPorts are the ports the unit listens on instead.
	OtherPorts []channel.UnitSocket `json:"other_ports,omitempty"`
	// Protocol is the last ready reading of a declaration naming a
	// service-protocol executable: serving also needs ready true there.
	Protocol *channel.ProtocolReading `json:"protocol,omitempty"`
	// Reads is how many verify calls the wait made; ElapsedMS how long it took.
	Reads     int   `json:"reads"`
	ElapsedMS int64 `json:"elapsed_ms"`
	// Refusal is set when the wait refused; the error returned is the same.
	Refusal *channel.UnitRefusal `json:"refusal,omitempty"`
}

// WaitServing waits until the declared unit of o.Name on o.Host owns its
// directory port on its declared address, reading the host with one verify
// call per poll. It refuses (a *refusal.Error whose Details is the result)
// when the unit's process exits or the unit is not loaded (not_serving,
// with the last exit code and stderr line), when the unit keeps listening
// on other ports and not on its own for the settle time
// (serving_elsewhere, naming them), and at the timeout (serving_timeout,
// with what was last seen). A service without a directory entry on the
// host is refused before any host is asked. A host that cannot be read is
// the host's error.
func (f *Fleet) WaitServing(ctx context.Context, o ServingOptions) (*ServingResult, error) {
	t, s, err := f.Declared(o.Host, o.Name)
	if err != nil {
		return nil, err
	}
	switch {
	case o.Timeout < 0 || o.Timeout > MaxServingTimeout:
		return nil, refusal.New(refusal.InvalidDuration, "timeout %s is outside 0 to %s", o.Timeout, MaxServingTimeout)
	case o.Timeout == 0:
		o.Timeout = DefaultServingTimeout
	}
	if o.Poll <= 0 {
		o.Poll = DefaultServingPoll
	}
	if o.Settle <= 0 {
		o.Settle = DefaultServingSettle
	}
	e, ok := f.Doc.DirectoryEntryOn(s.Name, t.Name)
	if !ok {
		return nil, &refusal.Error{Code: refusal.NotFound, Message: fmt.Sprintf("%s has no directory entry on %s: no declared port to wait for", s.Name, t.Name),
			Hint: "declare one under directory: in the registry (service, host, port), then wait"}
	}
	req := channel.VerifyRequest{OS: t.OS, LaunchdDomain: t.LaunchdDomain, Services: []channel.VerifyService{{Service: s, Port: e.Port, Address: f.Doc.ListenAddress(e)}}}
	h, err := f.host(t)
	if err != nil {
		return nil, err
	}
	return waitServing(ctx, h, t.Name, req, o, nil)
}

// servingFor is WaitServing's read for one declared service on an already
// reached host (the ensure hook), when it has a directory entry there; nil,
// nil when it has none.
// first, when not nil, is a reading the host already took (in the ensure
// call) and stands for the first read.
func (f *Fleet) servingFor(ctx context.Context, h channel.Host, t registry.Target, s registry.Service, o ServingOptions, first *channel.UnitCheck) (*ServingResult, error) {
	port, ok := f.servingPort(t, s)
	if !ok {
		return nil, nil
	}
	req := channel.VerifyRequest{OS: t.OS, LaunchdDomain: t.LaunchdDomain, Services: []channel.VerifyService{{Service: s, Port: port.Port, Address: port.Address}}}
	return waitServing(ctx, h, t.Name, req, o, first)
}

// servingPort is the directory port of s on t, when it has one there.
func (f *Fleet) servingPort(t registry.Target, s registry.Service) (channel.ServingPort, bool) {
	e, ok := f.Doc.DirectoryEntryOn(s.Name, t.Name)
	if !ok {
		return channel.ServingPort{}, false
	}
	return channel.ServingPort{Port: e.Port, Address: f.Doc.ListenAddress(e)}, true
}

// waitServing reads until the unit serves its port, refuses, or the
// timeout passes. A first reading the host already took is used as the
// first read when it is of this service and port; every other read is a
// verify call.
func waitServing(ctx context.Context, h channel.Host, host string, req channel.VerifyRequest, o ServingOptions, first *channel.UnitCheck) (*ServingResult, error) {
	now, after := o.Now, o.After
	if now == nil {
		now = time.Now
	}
	if after == nil {
		after = time.After
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultServingTimeout
	}
	if o.Poll <= 0 {
		o.Poll = DefaultServingPoll
	}
	if o.Settle <= 0 {
		o.Settle = DefaultServingSettle
	}
	vs := req.Services[0]
	r := &ServingResult{Host: host, Service: vs.Service.Name, Unit: vs.Service.Unit, Port: vs.Port, Address: vs.Address}
	start := now()
	deadline := start.Add(o.Timeout)
	var elsewhere string
	var elsewhereSince time.Time
	lagReads := 0
	if first != nil && (first.Unit != vs.Service.Unit || first.Port != vs.Port || first.Address != vs.Address) {
		first = nil // a reading of something else: read again
	}
	for {
		var res channel.VerifyResult
		var err error
		if first != nil {
			res, first = channel.VerifyResult{Units: []channel.UnitCheck{*first}}, nil
		} else {
			res, err = h.Verify(ctx, req)
		}
		r.Reads++
		r.ElapsedMS = now().Sub(start).Milliseconds()
		if err != nil {
			return r, err
		}
		if len(res.Units) != 1 {
			return r, fmt.Errorf("%s: verify answered %d units for 1 service", host, len(res.Units))
		}
		c := res.Units[0]
		r.Verdict = c.Verdict
		state, on := PortOwnership(c.Unit, c.Address, c.Listeners)
		r.Protocol = c.Protocol
		notReady := c.Protocol != nil && (c.Protocol.Ready == nil || !*c.Protocol.Ready)
		if state == PortOwned {
			l := on[0]
			r.Listen, r.PID, r.Program, r.OtherPorts = hostPort(l.Address, c.Port), l.PID, l.Program, nil
			if !notReady {
				r.Serving = true
				return r, nil
			}
		}
		if err := exited(r, c); err != nil {
			// The journal may lag the exit by a moment: read again a few
			// times for the program's last line before refusing without it.
			if r.ExitCode == nil || r.StderrLine != "" || lagReads >= maxLagReads || !now().Before(deadline) {
				return r, err
			}
			lagReads++
		}
		if key := socketsKey(c.UnitSockets); key != "" {
			if key != elsewhere {
				elsewhere, elsewhereSince = key, now()
			}
			r.OtherPorts = c.UnitSockets
			if now().Sub(elsewhereSince) >= o.Settle {
				return r, r.refuse(CodeServingElsewhere, "%s on %s listens on %s, not on its directory port %s", r.Unit, host, key, hostPort(r.Address, r.Port))
			}
		} else {
			elsewhere, r.OtherPorts = "", nil
		}
		if !now().Before(deadline) {
			if state == PortOwned {
				why := "its protocol executable says it is not ready"
				if c.Protocol.Cause != "" {
					why = fmt.Sprintf("its protocol executable could not be read (%s: %s)", c.Protocol.Op, c.Protocol.Cause)
				}
				return r, r.refuse(CodeServingTimeout, "%s on %s listens on %s but was not ready within %s: %s", r.Unit, host, r.Listen, o.Timeout, why)
			}
			why := "it listens on no port"
			switch {
			case state == PortElsewhere:
				why = fmt.Sprintf("the port is held by %s", holders(on))
			case elsewhere != "":
				why = "it listens on " + elsewhere
			}
			if c.Verdict.State != units.StateActive {
				why += fmt.Sprintf(" (the unit is %s)", c.Verdict.Detail)
			} else if c.Verdict.PID > 0 {
				why += fmt.Sprintf(" (pid %d runs)", c.Verdict.PID)
			}
			return r, r.refuse(CodeServingTimeout, "%s on %s did not listen on %s within %s: %s", r.Unit, host, hostPort(r.Address, r.Port), o.Timeout, why)
		}
		wait := o.Poll
		if left := deadline.Sub(now()); left < wait {
			wait = left
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-after(wait):
		}
	}
}

// maxLagReads is how many more reads a wait makes for the last log line of
// a process that exited.
const maxLagReads = 4

// Refusal codes of a serving wait.
const (
	CodeNotServing       = refusal.NotServing       // the unit's process exited, or the unit is not loaded
	CodeServingElsewhere = refusal.ServingElsewhere // the unit settled on another port
	CodeServingTimeout   = refusal.ServingTimeout   // the timeout passed before it listened
)

// exited refuses a unit whose process is gone: not loaded, failed,
// failing, or stopped after it ran; and one never started.
func exited(r *ServingResult, c channel.UnitCheck) error {
	v := c.Verdict
	switch {
	case v.State == units.StateMissing:
		return r.refuse(CodeNotServing, "%s is not loaded on %s", r.Unit, r.Host)
	case v.State == units.StateInactive && strings.HasPrefix(v.Detail, "activating"):
		return nil // on its way up (a start-pre, a notify start)
	case v.State == units.StateInactive && v.Starts == 0:
		return r.refuse(CodeNotServing, "%s on %s is inactive and was not started", r.Unit, r.Host)
	case v.State == units.StateFailed, v.State == units.StateFailing, v.State == units.StateInactive:
	default:
		return nil
	}
	code := v.LastExit
	r.ExitCode = &code
	r.StderrLine = LastLogLine(c.Logs)
	how := fmt.Sprintf("exited %d", code)
	if v.Signaled {
		how = fmt.Sprintf("ended on signal %d", code)
	}
	msg := fmt.Sprintf("%s on %s runs no process: its last run %s", r.Unit, r.Host, how)
	if r.StderrLine != "" {
		msg += ", last line: " + r.StderrLine
	}
	return r.refuse(CodeNotServing, "%s", msg)
}

func (r *ServingResult) refuse(code refusal.Code, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	r.Serving = false
	r.Refusal = &channel.UnitRefusal{Code: code, Message: msg}
	return &refusal.Error{Code: code, Message: msg, Details: r}
}

// LastLogLine is units.LastLogLine: the message of the last journal line.
func LastLogLine(lines []string) string { return units.LastLogLine(lines) }

func socketsKey(ss []channel.UnitSocket) string {
	var parts []string
	for _, s := range ss {
		parts = append(parts, hostPort(s.Address, s.Port))
	}
	return strings.Join(parts, ", ")
}

func holders(ls []units.Listener) string {
	var parts []string
	for _, l := range ls {
		switch {
		case l.Unit != "":
			parts = append(parts, fmt.Sprintf("%s (pid %d, %s)", l.Unit, l.PID, l.Program))
		case l.PID > 0:
			parts = append(parts, fmt.Sprintf("pid %d (%s)", l.PID, l.Program))
		default:
			parts = append(parts, "a process outside this host's process table on "+l.Address)
		}
	}
	return strings.Join(parts, ", ")
}

func hostPort(addr string, port int) string {
	if addr == "" {
		addr = "*"
	}
	if strings.Contains(addr, ":") && !strings.HasPrefix(addr, "[") {
		addr = "[" + addr + "]"
	}
	return addr + ":" + strconv.Itoa(port)
}

// StageServing is the stage of an ensure whose unit runs and does not
// own its directory port.
const StageServing = "serving"

// ServingError is an ensured unit that runs and does not serve its
// directory port: a failure of the ensure (the host was changed), not a
// refusal. Result holds the evidence.
type ServingError struct {
	Host   string
	Result *ServingResult
}

func (e *ServingError) Error() string {
	if e.Result != nil && e.Result.Refusal != nil {
		return e.Result.Refusal.Message
	}
	return e.Host + ": the unit does not serve its directory port"
}

// ensureServing is ensure's last read: a service with a directory port on
// the host must own it (WaitServing's read, bounded by the ensure's wait)
// before ensure reports success.
func (f *Fleet) ensureServing(ctx context.Context, h channel.Host, p ensurePlan, o EnsureOptions, r *EnsureOutcome, first *channel.UnitCheck) error {
	sr, err := f.servingFor(ctx, h, p.target, p.service, ServingOptions{Timeout: o.Wait}, first)
	if sr == nil && err == nil {
		return nil
	}
	r.Serving = sr
	if err == nil {
		return nil
	}
	if _, refused := refusal.CodeOf(err); refused && sr != nil && sr.Refusal != nil {
		return &stagedError{host: p.target.Name, stage: StageServing, err: &ServingError{Host: p.target.Name, Result: sr}}
	}
	return err
}

// Lines of a serving read.
func (r *ServingResult) Lines() []string {
	if r.Serving {
		return []string{fmt.Sprintf("%s on %s serves %s: pid %d (%s), after %d read(s)", r.Unit, r.Host, r.Listen, r.PID, orDash(r.Program), r.Reads)}
	}
	var out []string
	if r.Refusal != nil {
		out = append(out, fmt.Sprintf("%s: %s", r.Refusal.Code, r.Refusal.Message))
	}
	if r.ExitCode != nil {
		out = append(out, fmt.Sprintf("  last exit %d", *r.ExitCode))
	}
	if r.StderrLine != "" {
		out = append(out, "  last line: "+r.StderrLine)
	}
	if len(r.OtherPorts) > 0 {
		out = append(out, "  listens on "+socketsKey(r.OtherPorts))
	}
	return out
}
