package alert

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	retryablehttp "github.com/hashicorp/go-retryablehttp"

	"github.com/wisent/stado/register"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/units"
)

// Kind marks the JSON document every alert channel receives.
const Kind = "stado.alert"

// Alert is what a channel receives about a recovery attempt. It says the
// attempt was made and how each step and the restart ended; it never says
// the register holds the event (the append comes after the alert).
type Alert struct {
	Kind    string `json:"kind"`
	Event   string `json:"event"` // recovery_attempted
	Summary string `json:"summary"`
	// Recovery is the attempt; its alerts list is empty (this delivery is
	// one of them).
	Recovery register.Recovery `json:"recovery"`
}

// Alerter delivers alerts. The zero value uses small explicit bounds.
type Alerter struct {
	// Webhook posts alerts; nil means NewWebhookClient().
	Webhook *retryablehttp.Client
	// CommandTimeout bounds a command channel; 0 means 10 s.
	CommandTimeout time.Duration
}

// NewWebhookClient returns the webhook client with its bounds: 2 retries,
// waits of 100 ms to 1 s, 5 s per attempt, no logging (URLs may carry
// tokens).
func NewWebhookClient() *retryablehttp.Client {
	c := retryablehttp.NewClient()
	c.RetryMax = 2
	c.RetryWaitMin = 100 * time.Millisecond
	c.RetryWaitMax = time.Second
	c.HTTPClient.Timeout = 5 * time.Second
	c.Logger = nil
	c.ErrorHandler = retryablehttp.PassthroughErrorHandler
	return c
}

// New builds the alert about the recovery attempt rec.
func New(rec register.Recovery) Alert {
	rec.Alerts = nil
	return Alert{Kind: Kind, Event: "recovery_attempted", Summary: Summary(rec), Recovery: rec}
}

// Summary says in one line what an attempt did: each step and the restart.
func Summary(rec register.Recovery) string {
	var parts []string
	for _, s := range rec.Steps {
		if s.OK {
			parts = append(parts, "repair "+s.Step+" ok")
		} else {
			parts = append(parts, fmt.Sprintf("repair %s refused (%s)", s.Step, s.Refusal))
		}
	}
	if r := rec.Restart; r != nil {
		if r.OK {
			parts = append(parts, "restart "+r.Unit+" "+r.Answer)
		} else {
			parts = append(parts, fmt.Sprintf("restart %s refused (%s)", r.Unit, r.Refusal))
		}
	}
	verdict := "recovery attempted"
	if !rec.Complete {
		verdict = "recovery attempted, incomplete"
	}
	return fmt.Sprintf("%s of %s on %s after %.0fs unanswered (bound %.0fs): %s",
		verdict, rec.Service, rec.Host, rec.WaitedSeconds, rec.BoundSeconds, strings.Join(parts, "; "))
}

// Where says which process delivers an alert, and so whether its command
// channels may run. A command channel runs an argv the registry declares:
// whoever can push the registry chooses it, so it runs only where the
// registry already runs that target's code — the host process of the host
// whose target declares the channel — and nowhere else.
type Where int

const (
	// Elsewhere is every process but the owning host's host process: a
	// workstation command (stado optimize run in report or enforce mode) and
	// a host process recovering a peer's service. Command channels do not run
	// there; each is an outcome not delivered, Answer NotRun and Cause
	// CommandElsewhere. The zero value, so a caller that says nothing runs
	// nothing.
	Elsewhere Where = iota
	// OnOwningHost is the host process (stado host run) of the host whose
	// target declares the channels, alerting about its own services.
	// Command channels run.
	OnOwningHost
)

// NotRun is the Answer of a command channel that Deliver did not run
// (Elsewhere).
const NotRun = register.AlertNotRun

// CommandElsewhere is the Cause of a command channel that Deliver did not
// run (Elsewhere).
const CommandElsewhere = "command alerts run only on the host that owns the declaration, in its host process (stado host run); this process does not run them"

// Deliver sends doc, encoded as JSON, on every channel, in order, and
// returns each channel's outcome in the same order (empty, never nil, for no
// channels). It never stops at a failing channel, and a document that
// cannot be encoded is each channel's failure. doc is an Alert, or another
// alert document with its own kind (autonomy's, an incomplete declaration's).
//
// where decides command channels: OnOwningHost runs them; Elsewhere runs
// nothing, and says so in each one's outcome (NotRun, CommandElsewhere).
// Webhook channels are posted wherever Deliver runs; no part of a webhook's
// answer but its status code reaches an outcome. Deliver is safe for
// concurrent use.
func (a *Alerter) Deliver(ctx context.Context, where Where, channels []registry.AlertChannel, doc any) []register.AlertOutcome {
	out := []register.AlertOutcome{}
	body, err := json.Marshal(doc)
	for _, ch := range channels {
		switch {
		case ch.Command != nil && ch.Webhook == nil && where != OnOwningHost:
			out = append(out, register.AlertOutcome{Channel: ch.Name, Type: "command", Answer: NotRun, Cause: CommandElsewhere})
		case err != nil:
			out = append(out, register.AlertOutcome{Channel: ch.Name, Cause: "encode alert: " + err.Error()})
		case ch.Webhook != nil:
			out = append(out, a.webhook(ctx, ch, body))
		case ch.Command != nil:
			out = append(out, a.command(ctx, ch, body))
		default:
			out = append(out, register.AlertOutcome{Channel: ch.Name, Cause: "the channel declares neither webhook nor command"})
		}
	}
	return out
}

func (a *Alerter) webhook(ctx context.Context, ch registry.AlertChannel, body []byte) register.AlertOutcome {
	o := register.AlertOutcome{Channel: ch.Name, Type: "webhook"}
	c := a.Webhook
	if c == nil {
		c = NewWebhookClient()
	}
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodPost, ch.Webhook.URL, body)
	if err != nil {
		o.Cause = "build request: " + redactWebhookError(err, ch.Webhook.URL)
		return o
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		o.Cause = redactWebhookError(err, ch.Webhook.URL)
		return o
	}
	// The body is drained (a bounded read, so the connection can be
	// reused) and never recorded: a server may echo the request, token and
	// all, in any spelling. Of the status line only the code is kept, said
	// with net/http's own text for it, never the server's reason phrase.
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
	o.Answer = fmt.Sprintf("HTTP %d", resp.StatusCode)
	o.OK = resp.StatusCode >= 200 && resp.StatusCode < 300
	if !o.OK {
		o.Cause = "the webhook answered " + statusText(resp.StatusCode) + " (its body is not recorded)"
	}
	return o
}

// statusText is code with net/http's name for it, if it has one.
func statusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return strconv.Itoa(code) + " " + t
	}
	return strconv.Itoa(code)
}

func (a *Alerter) command(ctx context.Context, ch registry.AlertChannel, body []byte) register.AlertOutcome {
	o := register.AlertOutcome{Channel: ch.Name, Type: "command"}
	argv := ch.Command.Argv
	if len(argv) == 0 {
		o.Cause = "empty argv"
		return o
	}
	timeout := a.CommandTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := exec.CommandContext(ctx, argv[0], argv[1:]...)
	c.Stdin = bytes.NewReader(body)
	c.Env = []string{"PATH=" + units.FixedPath(runtime.GOOS)}
	c.WaitDelay = time.Second
	var outb units.Tail
	c.Stdout, c.Stderr = &outb, &outb
	err := c.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		o.OK, o.Answer = true, "exit 0"
	case ctx.Err() == context.DeadlineExceeded:
		o.Cause = fmt.Sprintf("%s did not end within %s", argv[0], timeout)
	case errors.As(err, &ee):
		o.Answer = fmt.Sprintf("exit %d", ee.ExitCode())
		o.Cause = units.LastLine(outb.String())
	default:
		o.Cause = err.Error()
	}
	return o
}
