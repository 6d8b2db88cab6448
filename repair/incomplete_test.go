package repair

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	retryablehttp "github.com/hashicorp/go-retryablehttp"

	"github.com/wisent/stado/alert"
	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/registry"
)

// alertSink is a webhook that keeps every alert it receives.
type alertSink struct {
	mu     sync.Mutex
	alerts []IncompleteAlert
	status int
}

func (s *alertSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var al IncompleteAlert
	_ = json.Unmarshal(b, &al)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.alerts = append(s.alerts, al)
	if s.status != 0 {
		w.WriteHeader(s.status)
		_, _ = io.WriteString(w, "sink down")
	}
}

func (s *alertSink) taken() []IncompleteAlert {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]IncompleteAlert(nil), s.alerts...)
}

// An incomplete declaration is alerted on the target's channels once per
// change of the declaration, reminded every interval while it stays
// incomplete, and forgotten once complete; a complete one never is.
func TestIncompleteDeclarationIsAlertedOncePerChangeAndRemindedAtTheInterval(t *testing.T) {
	sink := &alertSink{}
	srv := httptest.NewServer(sink)
	defer srv.Close()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	ia := &IncompleteAlerts{Interval: time.Hour, Now: func() time.Time { return now }}
	legacy := registry.Service{Name: "legacy", Unit: "legacy.service", UnitPath: "/etc/systemd/system/legacy.service", IncompleteReason: "two ExecStart= lines",
		Env: map[string]string{"TOKEN": "s3cret"}}
	target := registry.Target{Name: "h1", OS: registry.OSLinux,
		Alerts:   []registry.AlertChannel{{Name: "ops", Webhook: &registry.WebhookAlert{URL: srv.URL}}},
		Services: []registry.Service{legacy, {Name: "api", Unit: "api.service", Program: "/usr/local/bin/api"}}}
	pass := func() *beacon.Pass {
		p := &beacon.Pass{Host: "h1", Target: &target, Document: &registry.Document{Version: 1, Targets: []registry.Target{target}}, Beacon: &beacon.Beacon{}}
		ia.Contribute(context.Background(), p)
		ia.Idle()
		return p
	}
	steps := []struct {
		what    string
		advance time.Duration
		change  func()
		alerts  int // total alerts received after the pass
	}{
		{what: "first sight alerts", alerts: 1},
		{what: "the next pass is quiet", advance: time.Minute, alerts: 1},
		{what: "still quiet before the interval", advance: 58 * time.Minute, alerts: 1},
		{what: "a reminder at the interval", advance: time.Minute, alerts: 2},
		{what: "a changed declaration alerts at once", advance: time.Minute, change: func() { target.Services[0].UnitPath = "/etc/systemd/system/legacy2.service" }, alerts: 3},
		{what: "quiet again", advance: 10 * time.Minute, alerts: 3},
		{what: "complete: nothing", advance: 2 * time.Hour, change: func() { target.Services[0].Program = "/usr/bin/legacy" }, alerts: 3},
		{what: "incomplete again: a new alert", advance: time.Minute, change: func() { target.Services[0].Program = "" }, alerts: 4},
	}
	for _, s := range steps {
		now = now.Add(s.advance)
		if s.change != nil {
			s.change()
		}
		pass()
		if got := sink.taken(); len(got) != s.alerts {
			t.Fatalf("%s: %d alerts, want %d", s.what, len(got), s.alerts)
		}
	}
	got := sink.taken()
	first, reminder := got[0], got[1]
	if first.Kind != alert.Kind || first.Event != EventDeclarationIncomplete || first.Host != "h1" || first.Service != "legacy" ||
		first.Unit != "legacy.service" || first.Reason != "two ExecStart= lines" || first.Reminder {
		t.Errorf("first alert %+v", first)
	}
	if !reminder.Reminder || !reminder.Since.Equal(first.Since) {
		t.Errorf("reminder %+v, want a reminder since %s", reminder, first.Since)
	}
	if got[2].Reminder || got[2].UnitPath != "/etc/systemd/system/legacy2.service" {
		t.Errorf("alert after the change %+v", got[2])
	}
	raw, _ := json.Marshal(got)
	if strings.Contains(string(raw), "s3cret") {
		t.Error("an alert carries an env value")
	}
}

// A channel that fails is named in the following passes' refusals.
func TestFailedIncompleteAlertIsARefusalOfTheNextPasses(t *testing.T) {
	sink := &alertSink{status: http.StatusBadGateway}
	srv := httptest.NewServer(sink)
	defer srv.Close()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	ia := &IncompleteAlerts{Now: func() time.Time { return now }, Alerter: &alert.Alerter{Webhook: quickWebhook()}}
	target := registry.Target{Name: "h1", Alerts: []registry.AlertChannel{{Name: "ops", Webhook: &registry.WebhookAlert{URL: srv.URL}}},
		Services: []registry.Service{{Name: "legacy", Unit: "legacy.service"}}}
	for i := 0; i < 2; i++ {
		p := &beacon.Pass{Host: "h1", Target: &target, Beacon: &beacon.Beacon{}}
		ia.Contribute(context.Background(), p)
		ia.Idle()
		if i == 1 && (len(p.Beacon.Refusals) != 1 || p.Beacon.Refusals[0].Code != "alert_failed" || p.Beacon.Refusals[0].Subject != "legacy") {
			t.Fatalf("refusals %+v, want the failed alert", p.Beacon.Refusals)
		}
		now = now.Add(time.Minute)
	}
}

// The answerer alerts incomplete declarations on its own passes.
func TestAnswererAlertsIncompleteDeclarations(t *testing.T) {
	sink := &alertSink{}
	srv := httptest.NewServer(sink)
	defer srv.Close()
	a := &Answerer{}
	defer a.Close()
	target := registry.Target{Name: "h1", Alerts: []registry.AlertChannel{{Name: "ops", Webhook: &registry.WebhookAlert{URL: srv.URL}}},
		Services: []registry.Service{{Name: "legacy", Unit: "legacy.service"}}}
	a.Contribute(context.Background(), &beacon.Pass{Host: "h1", Target: &target, Document: &registry.Document{Version: 1}, Beacon: &beacon.Beacon{}})
	a.Idle()
	if got := sink.taken(); len(got) != 1 || got[0].Service != "legacy" {
		t.Fatalf("alerts %+v", got)
	}
}

// quickWebhook is the webhook client without retries.
func quickWebhook() *retryablehttp.Client {
	c := alert.NewWebhookClient()
	c.RetryMax = 0
	return c
}

// An incomplete declaration is alerted by its own host's process, so its
// target's command channel runs there.
func TestIncompleteAlertRunsTheOwnTargetsCommand(t *testing.T) {
	got := filepath.Join(t.TempDir(), "alert.json")
	ia := &IncompleteAlerts{}
	target := registry.Target{Name: "h1", Alerts: []registry.AlertChannel{{Name: "pager", Command: &registry.CommandAlert{Argv: []string{"/usr/bin/tee", got}}}},
		Services: []registry.Service{{Name: "legacy", Unit: "legacy.service"}}}
	p := &beacon.Pass{Host: "h1", Target: &target, Beacon: &beacon.Beacon{}}
	ia.Contribute(context.Background(), p)
	ia.Idle()
	if data, err := os.ReadFile(got); err != nil || !strings.Contains(string(data), `"event":"declaration_incomplete"`) {
		t.Fatalf("the command alert got %q (%v)", data, err)
	}
}
