package alert

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wisent/stado/register"
	"github.com/wisent/stado/registry"
)

func TestCommandAlertChannelGetsTheAlertOnStdinWithoutAShell(t *testing.T) {
	dir := t.TempDir()
	got := filepath.Join(dir, "alert.json")
	channels := []registry.AlertChannel{
		{Name: "file", Command: &registry.CommandAlert{Argv: []string{"/usr/bin/tee", got}}},
		{Name: "broken", Command: &registry.CommandAlert{Argv: []string{"/bin/sh", "-c", "echo pager down >&2; exit 4"}}},
		{Name: "refused", Webhook: &registry.WebhookAlert{URL: "http://127.0.0.1:1/hook?token=s3cret"}},
	}
	rec := register.Recovery{When: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC), Service: "svc", Host: "h1", Unit: "svc.service",
		Steps: []register.StepResult{}, Alerts: []register.AlertOutcome{}}
	rec.Restart = &register.Restart{Unit: "svc.service", OK: true, Answer: "done"}
	out := (&Alerter{}).Deliver(context.Background(), OnOwningHost, channels, New(rec))
	if len(out) != 3 || !out[0].OK || out[1].OK || out[1].Answer != "exit 4" || out[1].Cause != "pager down" || out[2].OK {
		t.Fatalf("outcomes %+v", out)
	}
	if strings.Contains(out[2].Cause, "s3cret") || out[2].Cause == "" {
		t.Errorf("webhook cause %q must name the failure without the URL", out[2].Cause)
	}
	data, err := os.ReadFile(got)
	if err != nil || !strings.Contains(string(data), `"kind":"stado.alert"`) || !strings.Contains(string(data), "restart svc.service done") {
		t.Errorf("command channel got %q (%v)", data, err)
	}
}

// No channel declared: nothing is delivered, and the outcomes are an empty
// list (the register writes "alerts": [], never null).
func TestNoChannelsDeliverNothing(t *testing.T) {
	for _, where := range []Where{Elsewhere, OnOwningHost} {
		out := (&Alerter{}).Deliver(context.Background(), where, nil, New(register.Recovery{Service: "s", Host: "h"}))
		if out == nil || len(out) != 0 {
			t.Fatalf("outcomes %#v, want an empty list", out)
		}
	}
}

// Only the owning host's host process runs a command channel. Anywhere else
// (a workstation's autonomy cycle, a peer recovery) the argv never runs,
// the outcome says why, and the webhooks beside it are still posted.
func TestCommandChannelsRunOnlyOnTheOwningHost(t *testing.T) {
	var posted atomic.Int32
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { posted.Add(1) }))
	defer hook.Close()
	for _, tc := range []struct {
		name  string
		where Where
		run   bool
	}{
		// the zero value: a caller that says nothing runs nothing
		{"zero value", Where(0), false},
		// a workstation command or a peer recovery
		{"elsewhere", Elsewhere, false},
		// stado host run, alerting about its own services
		{"on the owning host", OnOwningHost, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			planted := filepath.Join(t.TempDir(), "planted")
			channels := []registry.AlertChannel{
				{Name: "pager", Command: &registry.CommandAlert{Argv: []string{"/bin/sh", "-c", "touch " + planted}}},
				{Name: "ops", Webhook: &registry.WebhookAlert{URL: hook.URL + "/hook"}},
			}
			before := posted.Load()
			out := (&Alerter{}).Deliver(context.Background(), tc.where, channels, New(register.Recovery{Service: "s", Host: "h"}))
			if len(out) != 2 || !out[1].OK || posted.Load() != before+1 {
				t.Fatalf("outcomes %+v, webhook posts %d, want the webhook posted once", out, posted.Load()-before)
			}
			_, err := os.Stat(planted)
			if ran := err == nil; ran != tc.run {
				t.Fatalf("the command ran: %v, want %v (outcome %+v)", ran, tc.run, out[0])
			}
			if tc.run {
				if !out[0].OK || out[0].Answer != "exit 0" {
					t.Errorf("outcome %+v, want exit 0", out[0])
				}
				return
			}
			if want := (register.AlertOutcome{Channel: "pager", Type: "command", Answer: NotRun, Cause: CommandElsewhere}); out[0] != want {
				t.Errorf("outcome %+v, want %+v", out[0], want)
			}
		})
	}
}
