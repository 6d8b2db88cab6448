package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/wisent/stado/desktop"
	"github.com/wisent/stado/tests/testbed"
)

// staleAfter trusts beacons a minute old: on a loaded machine a pass of a
// 1 s interval can take longer than its own 3 s bound, and a stale host3
// would only be listed as not read.
const staleAfter = "1m"

// The converge journey: three testbed hosts each run `stado host run`
// (cj-stado, publishing to the journey's store) and ran cj-app; the
// registry then declares cj-app on host1 and host2 only. `stado service
// converge cj-app` retires host3's copy, which its beacon shows undeclared,
// and leaves host1's and host2's processes as they were (same MainPID).
// Then the same through the local API with the token, and through Desktop
// in Chromium.

// convergeFleet is the registry: %[1]s is the store URL; appOn says which
// hosts declare cj-app.
func convergeFleet(bed *testbed.Bed, storeURL string, appOn map[string]bool) string {
	var b strings.Builder
	b.WriteString("version: 1\ntargets:\n")
	for _, h := range bed.Hosts()[:3] {
		fmt.Fprintf(&b, "  - name: %s\n    ssh: {address: %s, port: 22, user: root}\n    os: linux\n    services:\n", h.Name, h.Addr)
		fmt.Fprintf(&b, "      - name: cj-stado\n        unit: cj-stado.service\n        program: /usr/local/bin/stado\n        args: [host, run]\n"+
			"        env: {STADO_STORE: %q, STADO_INTERVAL: 1s, STADO_HOST: %s, HOME: /root}\n", storeURL, h.Name)
		if appOn[h.Name] {
			b.WriteString("      - {name: cj-app, unit: cj-app.service, program: /bin/sleep, args: [infinity]}\n")
		}
	}
	return b.String()
}

func TestConvergeJourneyRetiresTheCopyOfAHostNoLongerDeclaringItFromTheCLITheAPIAndDesktop(t *testing.T) {
	t.Parallel()
	bctx := browser(t)
	bed := testbed.Shared(t, 3)
	bin := testbed.BuildStado(t)
	bed.InstallStado(t, bin)
	ctx := context.Background()
	h1, h2, h3 := bed.Host(1), bed.Host(2), bed.Host(3)
	storeURL := "file://" + bed.NewStore(t)
	c := newCLI(t, bed, storeURL)
	cleanupUnits(t, bed, []testbed.Host{h1, h2, h3}, "cj-app.service", "cj-stado.service")
	fleetFile := filepath.Join(t.TempDir(), "fleet.yaml")
	push := func(appOn map[string]bool, why string) {
		t.Helper()
		if err := os.WriteFile(fleetFile, []byte(convergeFleet(bed, storeURL, appOn)), 0o644); err != nil {
			t.Fatal(err)
		}
		c.mustRun(t, "registry", "push", fleetFile, "--reason", why)
	}
	all := map[string]bool{h1.Name: true, h2.Name: true, h3.Name: true}
	declaredOn12 := map[string]bool{h1.Name: true, h2.Name: true}
	push(all, "cj-app everywhere")
	c.mustRun(t, "service", "ensure", "cj-stado", "--all", "--reason", "the host processes")
	c.mustRun(t, "service", "ensure", "cj-app", "--all", "--reason", "cj-app everywhere")

	mainPID := func(h testbed.Host) string {
		out, _, _ := bed.Exec(ctx, h, "systemctl", "show", "-p", "MainPID", "--value", "cj-app.service")
		return strings.TrimSpace(out)
	}
	active := func(h testbed.Host) string {
		out, _, _ := bed.Exec(ctx, h, "systemctl", "is-active", "cj-app.service")
		return strings.TrimSpace(out)
	}
	// host3 leaves cj-app's placement; its host process keeps publishing,
	// and its beacon shows the copy undeclared
	dropHost3 := func() (string, string) {
		t.Helper()
		if a := active(h3); a != "active" {
			t.Fatalf("host3's cj-app is %s before the registry drops it", a)
		}
		push(declaredOn12, "host3 leaves cj-app")
		eventually(t, 90*time.Second, "host3's beacon shows cj-app undeclared", func() (bool, string) {
			_, out, _ := c.run(t, "service", "list", "--undeclared", "--host", h3.Name, "--stale-after", staleAfter, "--json")
			return strings.Contains(out, `"unit": "cj-app.service"`), out
		})
		p1, p2 := mainPID(h1), mainPID(h2)
		if p1 == "0" || p1 == "" || p2 == "0" || p2 == "" {
			t.Fatalf("cj-app's MainPID on host1 %q, host2 %q", p1, p2)
		}
		return p1, p2
	}
	// host3 runs cj-app again for the next road
	restoreHost3 := func() {
		t.Helper()
		push(all, "cj-app on host3 again")
		c.mustRun(t, "service", "ensure", "cj-app", "--host", h3.Name, "--reason", "cj-app on host3 again")
	}
	checkConverged := func(road, p1, p2 string) {
		t.Helper()
		if a := active(h3); a == "active" || a == "activating" {
			t.Errorf("%s: host3's cj-app is %s after converge, want it retired", road, a)
		}
		if out, _, _ := bed.Exec(ctx, h3, "systemctl", "show", "-p", "LoadState", "--value", "cj-app.service"); strings.TrimSpace(out) != "not-found" {
			t.Errorf("%s: host3's cj-app.service LoadState %q, want not-found (unit removed)", road, strings.TrimSpace(out))
		}
		if q1, q2 := mainPID(h1), mainPID(h2); q1 != p1 || q2 != p2 {
			t.Errorf("%s: MainPID host1 %s→%s, host2 %s→%s: a declared copy was disturbed", road, p1, q1, p2, q2)
		}
		t.Logf("%s: host3 retired; host1 MainPID %s, host2 MainPID %s unchanged", road, p1, p2)
	}

	// 1. The CLI: the dry run plans host3's retire and changes nothing.
	p1, p2 := dropHost3()
	plan := c.mustRun(t, "service", "converge", "cj-app", "--dry-run", "--stale-after", staleAfter)
	t.Logf("stado service converge cj-app --dry-run:\n%s", plan)
	for _, want := range []string{"would converge cj-app", h3.Name + ": retire cj-app.service: would unit-remove cj-app.service", h1.Name + ": ensure cj-app.service: would"} {
		if !strings.Contains(plan, want) {
			t.Errorf("the dry run lacks %q", want)
		}
	}
	if a := active(h3); a != "active" {
		t.Fatalf("the dry run touched host3: cj-app is %s", a)
	}
	out := c.mustRun(t, "service", "converge", "cj-app", "--reason", "converge journey", "--stale-after", staleAfter, "--json")
	var doc struct {
		Kind    string `json:"kind"`
		Results []struct {
			Host, Action, Outcome string
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Kind != "stado.service.converge" || len(doc.Results) != 3 {
		t.Fatalf("converge --json: %v\n%s", err, out)
	}
	for _, r := range doc.Results {
		want := map[string]string{h1.Name: "ensure", h2.Name: "ensure", h3.Name: "retire"}[r.Host]
		if r.Action != want || r.Outcome != "done" {
			t.Errorf("converge row %+v, want %s done", r, want)
		}
	}
	checkConverged("cli", p1, p2)

	// 2. The API, with the token: the session's CSRF token, a dry run, the run.
	restoreHost3()
	p1, p2 = dropHost3()
	pageURL := startDesktop(t, c, "--stale-after", staleAfter)
	u, _ := url.Parse(pageURL)
	base, token := "http://"+u.Host, u.Query().Get("token")
	api := func(method, path, csrf string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if csrf != "" {
			req.Header.Set(desktop.CSRFHeader, csrf)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	code, body := api("GET", "/api/v1/session", "")
	var sess struct{ CSRF string }
	if json.Unmarshal([]byte(body), &sess); code != 200 || sess.CSRF == "" {
		t.Fatalf("GET /api/v1/session: %d %s", code, body)
	}
	// refused before any work: no CSRF token, no access token
	if code, body := api("POST", "/api/v1/services/cj-app/converge", ""); code != 403 || !strings.Contains(body, desktop.CodeCSRFRefused) {
		t.Errorf("converge without the CSRF token: %d %s", code, body)
	}
	saved := token
	token = ""
	if code, body := api("POST", "/api/v1/services/cj-app/converge", sess.CSRF); code != 403 || !strings.Contains(body, desktop.CodeTokenRequired) {
		t.Errorf("converge without the token: %d %s", code, body)
	}
	token = saved
	if a := active(h3); a != "active" {
		t.Fatalf("a refused API request touched host3: cj-app is %s", a)
	}
	code, body = api("POST", "/api/v1/services/cj-app/converge?dry_run=true", sess.CSRF)
	if code != 200 || !strings.Contains(body, `"outcome": "planned"`) || active(h3) != "active" {
		t.Fatalf("API converge dry run: %d %s", code, body)
	}
	code, body = api("POST", "/api/v1/services/cj-app/converge?reason=api", sess.CSRF)
	t.Logf("POST /api/v1/services/cj-app/converge: %d\n%s", code, body)
	if code != 200 || !strings.Contains(body, `"ok": true`) {
		t.Fatalf("API converge: %d %s", code, body)
	}
	checkConverged("api", p1, p2)

	// 3. Desktop in Chromium: Converge…, the plan per host, confirm, each
	// host's result.
	restoreHost3()
	p1, p2 = dropHost3()
	shots := artifactDir(t)
	within(t, bctx, 60*time.Second, "open the page", chromedp.Navigate(pageURL), chromedp.WaitVisible(css(`#op-converge`)))
	within(t, bctx, 90*time.Second, "ask to converge cj-app", setField("op-service", "cj-app"), chromedp.Click(css(`#op-converge`)),
		chromedp.WaitVisible(css(`#op-output tr.host-result[data-host="`+h3.Name+`"][data-action="retire"][data-outcome="planned"]`)),
		chromedp.WaitVisible(css(`#op-output [data-confirm-op]`)))
	if a := active(h3); a != "active" {
		t.Fatalf("the page's confirmation step touched host3: cj-app is %s", a)
	}
	screenshot(t, bctx, shots, "converge-plan")
	within(t, bctx, 120*time.Second, "confirm the converge", chromedp.Click(css(`#op-output [data-confirm-op]`)),
		chromedp.WaitVisible(css(`#op-output tr.host-result[data-host="`+h3.Name+`"][data-action="retire"][data-outcome="done"]`)))
	results := read(t, bctx, 10*time.Second, "the results per host", chromedp.Text(css(`#op-output table.host-results`)))
	t.Logf("desktop results:\n%s", results)
	for _, h := range []testbed.Host{h1, h2} {
		within(t, bctx, 10*time.Second, "the ensure row of "+h.Name, chromedp.WaitVisible(css(`#op-output tr.host-result[data-host="`+h.Name+`"][data-action="ensure"][data-outcome="done"]`)))
	}
	screenshot(t, bctx, shots, "converge-done")
	checkConverged("desktop", p1, p2)
}
