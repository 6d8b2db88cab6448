package repair

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/units"
)

func TestLocalStepRunsItsArgvWithItsEnvironmentAndNoShell(t *testing.T) {
	cat, err := catalog.ValidateSite([]byte(`version: 1
steps:
  dump-env:
    needs: [SKARBIEC_READY_WITHIN_SECONDS]
    linux: {argv: [/usr/bin/env], env: {GNUPGHOME: /var/lib/x; rm -rf /}, timeout_seconds: 5}
  sleepy:
    linux: {argv: [/bin/sleep, "30"], timeout_seconds: 1}
`), "test")
	if err != nil {
		t.Fatal(err)
	}
	l := &Local{Catalog: cat, OS: registry.OSLinux}
	ctx := context.Background()

	r := l.RunStep(ctx, "h1", "dump-env", StepInputs(7))
	if !r.OK || *r.ExitCode != 0 {
		t.Fatalf("%+v", r)
	}
	for _, want := range []string{"SKARBIEC_READY_WITHIN_SECONDS=7", "GNUPGHOME=/var/lib/x; rm -rf /", "PATH=/usr/local/sbin:"} {
		if !strings.Contains(r.Output, want) {
			t.Errorf("step environment %q lacks %q", r.Output, want)
		}
	}

	// without a refresh interval the needed variable is missing: refused, named
	r = l.RunStep(ctx, "h1", "dump-env", StepInputs(0))
	if r.OK || r.Code != CodeInputMissing || !strings.Contains(r.Refusal, "SKARBIEC_READY_WITHIN_SECONDS") {
		t.Errorf("missing input: %+v", r)
	}
	// a step past its timeout is ended and refused
	r = l.RunStep(ctx, "h1", "sleepy", nil)
	if r.OK || r.Code != CodeStepTimeout {
		t.Errorf("timeout: %+v", r)
	}
	// an unknown step is refused
	if r = l.RunStep(ctx, "h1", "no-such", nil); r.Code != CodeStepUnknown {
		t.Errorf("unknown: %+v", r)
	}
	// the shipped crypto step names the variable when no interval is known
	if _, err := (&Local{OS: registry.OSLinux}).Command("crypto", StepInputs(0)); !errors.As(err, new(*catalog.NeedError)) {
		t.Errorf("crypto without an interval: %v", err)
	}
}

func TestLocalRefusesAnotherHostAndAScopeWithoutManager(t *testing.T) {
	l := &Local{Host: "h1", OS: registry.OSLinux, Managers: map[string]units.Manager{}}
	if r := l.Restart(context.Background(), "h2", "system", "x.service"); r.OK || r.Code != CodeWrongHost {
		t.Errorf("other host: %+v", r)
	}
	if r := l.Restart(context.Background(), "h1", "user", "x.service"); r.OK || r.Code != CodeNoManager {
		t.Errorf("no manager: %+v", r)
	}
	if r := l.RunStep(context.Background(), "h2", "host", nil); r.OK || r.Code != CodeWrongHost {
		t.Errorf("step on other host: %+v", r)
	}
}

func TestCommandAlertChannelGetsTheAlertOnStdinWithoutAShell(t *testing.T) {
	dir := t.TempDir()
	got := filepath.Join(dir, "alert.json")
	channels := []registry.AlertChannel{
		{Name: "file", Command: &registry.CommandAlert{Argv: []string{"/usr/bin/tee", got}}},
		{Name: "broken", Command: &registry.CommandAlert{Argv: []string{"/bin/sh", "-c", "echo pager down >&2; exit 4"}}},
		{Name: "refused", Webhook: &registry.WebhookAlert{URL: "http://127.0.0.1:1/hook?token=s3cret"}},
	}
	rec := sampleRecovery("svc")
	rec.Restart = &RestartReport{Unit: "svc.service", OK: true, Answer: "done"}
	out := (&Alerter{}).Deliver(context.Background(), channels, NewAlert(rec))
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

// stado's own repair steps act on the store the host process runs on: the
// step gets it as STADO_STORE, beside HOME.
func TestStepsGetTheHostProcesssStore(t *testing.T) {
	cat, err := catalog.ValidateSite([]byte(`version: 1
steps:
  dump-env:
    linux: {argv: [/usr/bin/env], timeout_seconds: 5}
`), "test")
	if err != nil {
		t.Fatal(err)
	}
	l := &Local{Catalog: cat, OS: registry.OSLinux, Home: "/var/lib/stado", StoreURL: "file:///var/lib/stado/store"}
	r := l.RunStep(context.Background(), "h1", "dump-env", nil)
	for _, want := range []string{"STADO_STORE=file:///var/lib/stado/store", "HOME=/var/lib/stado"} {
		if !strings.Contains(r.Output, want) {
			t.Errorf("step environment %q lacks %q", r.Output, want)
		}
	}
	l.StoreURL = ""
	if r := l.RunStep(context.Background(), "h1", "dump-env", nil); strings.Contains(r.Output, "STADO_STORE") {
		t.Errorf("no store given, yet the step sees one: %q", r.Output)
	}
}
