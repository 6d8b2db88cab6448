package local_test

import (
	"context"
	"strings"
	"testing"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/channel/local"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
)

func stepCatalog(t *testing.T, site string) *catalog.Catalog {
	t.Helper()
	cat, err := catalog.ValidateSite([]byte(site), "test")
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

func TestAStepRunsItsArgvWithItsEnvironmentAndNoShell(t *testing.T) {
	cat := stepCatalog(t, `version: 1
steps:
  dump-env:
    needs: [SKARBIEC_READY_WITHIN_SECONDS]
    linux: {argv: [/usr/bin/env], env: {GNUPGHOME: /var/lib/x; rm -rf /}, timeout_seconds: 5}
  sleepy:
    linux: {argv: [/bin/sleep, "30"], timeout_seconds: 1}
`)
	run := (&local.StepRunner{OS: registry.OSLinux}).Run
	ctx := context.Background()

	r := run(ctx, cat, "dump-env", map[string]string{"SKARBIEC_READY_WITHIN_SECONDS": "7"})
	if !r.OK || *r.ExitCode != 0 {
		t.Fatalf("%+v", r)
	}
	for _, want := range []string{"SKARBIEC_READY_WITHIN_SECONDS=7", "GNUPGHOME=/var/lib/x; rm -rf /", "PATH=/usr/local/sbin:"} {
		if !strings.Contains(r.Output, want) {
			t.Errorf("step environment %q lacks %q", r.Output, want)
		}
	}
	// without a refresh interval the needed variable is missing: refused, named
	r = run(ctx, cat, "dump-env", nil)
	if r.OK || r.Code != string(refusal.InputMissing) || !strings.Contains(r.Refusal, "SKARBIEC_READY_WITHIN_SECONDS") {
		t.Errorf("missing input: %+v", r)
	}
	// a step past its timeout is ended and refused
	r = run(ctx, cat, "sleepy", nil)
	if r.OK || r.Code != string(refusal.StepTimeout) {
		t.Errorf("timeout: %+v", r)
	}
	// an unknown step is refused
	if r = run(ctx, cat, "no-such", nil); r.Code != string(refusal.StepUnknown) {
		t.Errorf("unknown: %+v", r)
	}
}

// stado's own repair steps act on the store the host process runs on: the
// step gets it as STADO_STORE, beside HOME.
func TestStepsGetTheHostProcesssStore(t *testing.T) {
	cat := stepCatalog(t, `version: 1
steps:
  dump-env:
    linux: {argv: [/usr/bin/env], timeout_seconds: 5}
`)
	l := &local.StepRunner{OS: registry.OSLinux, Home: "/var/lib/stado", StoreURL: "file:///var/lib/stado/store"}
	r := l.Run(context.Background(), cat, "dump-env", nil)
	for _, want := range []string{"STADO_STORE=file:///var/lib/stado/store", "HOME=/var/lib/stado"} {
		if !strings.Contains(r.Output, want) {
			t.Errorf("step environment %q lacks %q", r.Output, want)
		}
	}
	l.StoreURL = ""
	if r := l.Run(context.Background(), cat, "dump-env", nil); strings.Contains(r.Output, "STADO_STORE") {
		t.Errorf("no store given, yet the step sees one: %q", r.Output)
	}
}

// A host made by New runs the repair steps its catalog holds: the step
// runner lives at the host end, so `stado host channel repair-step` needs
// no wiring from cli.
func TestANewHostRunsRepairSteps(t *testing.T) {
	cat := stepCatalog(t, "version: 1\nsteps:\n  ok:\n    linux: {argv: [/bin/true], timeout_seconds: 5}\n")
	h := local.New(t.TempDir(), "", "test")
	h.GOOS = registry.OSLinux
	h.Catalog = func(context.Context) (*catalog.Catalog, error) { return cat, nil }
	r, err := h.RepairStep(context.Background(), channel.StepRequest{Step: "ok"})
	if err != nil || !r.OK || len(r.Argv) != 1 || r.Argv[0] != "/bin/true" {
		t.Fatalf("repair-step ok: %+v, %v", r, err)
	}
}
