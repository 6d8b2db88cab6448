package alert

import (
	"context"
	"os"
	"path/filepath"
	"strings"
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
	out := (&Alerter{}).Deliver(context.Background(), channels, New(rec))
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
	out := (&Alerter{}).Deliver(context.Background(), nil, New(register.Recovery{Service: "s", Host: "h"}))
	if out == nil || len(out) != 0 {
		t.Fatalf("outcomes %#v, want an empty list", out)
	}
}
