package alert

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"runtime"
	"sort"
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

// Deliver sends doc, encoded as JSON, on every channel, in order, and
// returns each channel's outcome in the same order (empty, never nil, for no
// channels). It never stops at a failing channel, and a document that
// cannot be encoded is each channel's failure. doc is an Alert, or another
// alert document with its own kind (autonomy's, an incomplete declaration's).
// Deliver is safe for concurrent use.
func (a *Alerter) Deliver(ctx context.Context, channels []registry.AlertChannel, doc any) []register.AlertOutcome {
	out := []register.AlertOutcome{}
	body, err := json.Marshal(doc)
	for _, ch := range channels {
		switch {
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
	defer resp.Body.Close()
	detail, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	o.Answer = fmt.Sprintf("HTTP %d", resp.StatusCode)
	o.OK = resp.StatusCode >= 200 && resp.StatusCode < 300
	if !o.OK {
		o.Cause = redactWebhookText(strings.TrimSpace(strings.ToValidUTF8(string(detail), "?")), ch.Webhook.URL)
	}
	return o
}

// redactWebhookError says err without the webhook URL raw (which may hold
// a token in its user info, path or query). Every *url.Error in the chain
// is said with the redacted URL instead of the one net/http prints, which
// may be spelled differently from the registry's text (an upper-case
// scheme, an escaped space or non-ASCII path, a re-encoded query); what
// remains is stripped of every spelling of the URL and of its parts.
func redactWebhookError(err error, raw string) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return redactWebhookText(ue.Op+" "+RedactedURL(raw)+": "+redactWebhookError(ue.Err, raw), raw)
	}
	return redactWebhookText(err.Error(), raw)
}

// RedactedURL is what may be said of a webhook URL: its scheme and host,
// never its user info, path or query.
func RedactedURL(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" {
		return "<webhook url>"
	}
	return strings.ToLower(u.Scheme) + "://" + u.Host + "/<redacted>"
}

// redactWebhookText removes from msg every spelling of raw and of its
// secret-bearing parts.
func redactWebhookText(msg, raw string) string {
	if raw == "" {
		return msg
	}
	var secrets []string
	add := func(ss ...string) {
		for _, s := range ss {
			if len(s) >= 4 {
				secrets = append(secrets, s, strconv.Quote(s), url.QueryEscape(s), url.PathEscape(s))
			}
		}
	}
	add(raw, strings.TrimSpace(raw))
	if u, err := url.Parse(strings.TrimSpace(raw)); err == nil {
		add(u.String(), u.Redacted(), u.RawQuery, u.Path, u.EscapedPath(), u.RawPath, u.Fragment, u.Opaque)
		if q, err := url.QueryUnescape(u.RawQuery); err == nil {
			add(q)
		}
		for _, vs := range u.Query() {
			add(vs...)
		}
		if u.User != nil {
			p, _ := u.User.Password()
			add(u.User.String(), u.User.Username(), p)
		}
		for _, seg := range strings.Split(u.Path, "/") {
			if len(seg) >= 8 {
				add(seg)
			}
		}
	}
	// Longest first, so a part never leaves the rest of a longer spelling.
	sort.Slice(secrets, func(i, j int) bool { return len(secrets[i]) > len(secrets[j]) })
	for _, s := range secrets {
		msg = strings.ReplaceAll(msg, s, "<redacted>")
	}
	return msg
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
