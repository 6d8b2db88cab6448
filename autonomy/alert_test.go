package autonomy

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wisent/stado/alert"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

// unreachableHost is a host whose every verify fails, as a dead sshd does.
type unreachableHost struct{ channel.Host }

func (unreachableHost) OS() string { return registry.OSLinux }

func (unreachableHost) Verify(context.Context, channel.VerifyRequest) (channel.VerifyResult, error) {
	return channel.VerifyResult{}, errors.New("connection refused")
}

// failingActor fails every action it is given.
type failingActor struct{ acted int }

func (a *failingActor) ActOn(_ context.Context, _ string, rows []*Row, proceed func() bool, done func(*Row)) {
	for _, r := range rows {
		if !proceed() {
			return
		}
		a.acted++
		r.Result = &ActionResult{Action: r.Action}
		done(r)
	}
}

// A registry writer declares a command alert on every host; the autonomy
// cycle (a workstation command, in report or enforce mode) alerts a refusal
// or a failed action and never runs that argv: the channel is recorded as
// not run, with why. The webhook beside it is still posted.
func TestAutonomyCyclesNeverRunACommandAlert(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mode  string
		event string
	}{
		// report: host1 is unreachable, a refusal is alerted
		{"report", registry.AutonomyReport, EventRefused},
		// enforce: host0's start fails, the failed action is alerted
		{"enforce", registry.AutonomyEnforce, EventActionFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var posted atomic.Int32
			hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { posted.Add(1) }))
			defer hook.Close()
			planted := filepath.Join(t.TempDir(), "planted-by-the-registry")

			st := fileStore(t)
			now := time.Now()
			doc, view, connect := benchFleet(4, 2, now)
			for i := range doc.Targets {
				doc.Targets[i].SSH.Address = "127.0.0.1"
				doc.Targets[i].Alerts = []registry.AlertChannel{
					{Name: "pager", Command: &registry.CommandAlert{Argv: []string{"/bin/sh", "-c", "echo pwned > " + planted}}},
					{Name: "ops", Webhook: &registry.WebhookAlert{URL: hook.URL + "/hook"}},
				}
			}
			doc.Autonomy = registry.Autonomy{Mode: tc.mode}
			ctx := context.Background()
			if _, err := registry.Push(ctx, st, doc, 0, "alert test"); err != nil {
				t.Fatal(err)
			}
			for name, b := range view.Beacons {
				raw, _ := json.Marshal(b)
				if _, err := st.Put(ctx, store.BeaconPrefix+name, raw, store.PutOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			conn := func(tg registry.Target) channel.Host {
				if tc.mode == registry.AutonomyReport && tg.Name == "host1" {
					return unreachableHost{}
				}
				return connect(tg)
			}
			r := &Runner{Store: st, Connect: func() (channel.Connector, func()) { return conn, func() {} }, Actor: &failingActor{}}
			c, _ := r.Run(ctx, Options{Mode: tc.mode, LeaseTTL: MinLeaseTTL})
			if c == nil {
				t.Fatal("no cycle")
			}
			if _, err := os.Stat(planted); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the registry's command alert ran on this machine: %v", err)
			}
			if len(c.Alerts) == 0 {
				t.Fatalf("cycle alerted nothing: %+v", c.Rows)
			}
			for _, a := range c.Alerts {
				if a.Event != tc.event || len(a.Channels) != 2 {
					t.Fatalf("alert %+v, want %s on both channels", a, tc.event)
				}
				cmd, hk := a.Channels[0], a.Channels[1]
				if cmd.Channel != "pager" || cmd.Type != "command" || cmd.OK || cmd.Answer != alert.NotRun || !strings.Contains(cmd.Cause, "only on the host that owns the declaration") {
					t.Errorf("command channel %+v, want not run, saying why", cmd)
				}
				if !hk.OK {
					t.Errorf("webhook channel %+v, want delivered", hk)
				}
			}
			if int(posted.Load()) != len(c.Alerts) {
				t.Errorf("webhook got %d posts for %d alerts", posted.Load(), len(c.Alerts))
			}
			// The recorded cycle says it too, in JSON and in text.
			cs, err := History(ctx, st, 1)
			if err != nil || len(cs) != 1 || len(cs[0].Alerts) != len(c.Alerts) || cs[0].Alerts[0].Channels[0].Cause != alert.CommandElsewhere {
				t.Fatalf("recorded %+v (%v)", cs, err)
			}
			if text := strings.Join(c.Lines(), "\n"); !strings.Contains(text, "pager not run: command alerts run only on the host that owns the declaration") {
				t.Errorf("text does not say the command was not run:\n%s", text)
			}
		})
	}
}
