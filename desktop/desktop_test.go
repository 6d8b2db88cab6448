package desktop_test

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/desktop"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/store"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func intp(n int) *int { return &n }

// markedFleet: host0000 has a crash loop (s0), a 503 answer (s1) and a
// question that stood with no recovery (s2); host0001's beacon is stale;
// host0002 is healthy except s2, whose question is still being asked.
func markedFleet(t *testing.T) store.Store {
	return fleetFixture(t, 3, 3, t0, func(b *beacon.Beacon) {
		switch b.Host {
		case "host0000":
			b.Units[0] = beacon.UnitReport{Service: "s0", Unit: "s0.service", State: beacon.StateFailing, LastExit: intp(3), Starts: 5,
				Sentence: "s0.service runs no process: its last run exited 3", LastStderr: "s0 is dying"}
			b.Units[1].Answering = &beacon.Answering{State: beacon.AnswerFinished, Finished: &beacon.Finished{Answered: &beacon.Answered{Status: 503, Detail: "vault sealed", At: t0}}}
			since := t0.Add(-9 * time.Second)
			b.Units[2].Answering = &beacon.Answering{State: beacon.AnswerStood, Since: &since, WaitedSeconds: 9, BoundSeconds: 2}
		case "host0001":
			b.At = t0.Add(-90 * time.Second)
		case "host0002":
			b.Units[2].Answering = &beacon.Answering{State: beacon.AnswerAsked}
			b.Units[1].Answering = &beacon.Answering{State: beacon.AnswerFinished, Finished: &beacon.Finished{Answered: &beacon.Answered{Status: 200, Successful: true, At: t0}}}
		}
	})
}

type page struct {
	srv    *desktop.Server
	ts     *httptest.Server
	client *http.Client
}

func openPage(t *testing.T, st store.Store) *page {
	t.Helper()
	srv, err := desktop.New(desktop.Config{Store: st, Now: func() time.Time { return t0 }, PageSize: 50})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	jar, _ := cookiejar.New(nil)
	p := &page{srv: srv, ts: ts, client: &http.Client{Jar: jar}}
	// the printed address: the token sets the cookie and leaves the URL
	res, err := p.client.Get(ts.URL + "/?token=" + url.QueryEscape(srv.Token()))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 || res.Request.URL.RawQuery != "" {
		t.Fatalf("the printed address answered %d at %s, want 200 at / without the token", res.StatusCode, res.Request.URL)
	}
	return p
}

func (p *page) get(t *testing.T, path string) (int, string) {
	t.Helper()
	res, err := p.client.Get(p.ts.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func (p *page) csrf(t *testing.T) string {
	_, body := p.get(t, "/")
	m := regexp.MustCompile(`<meta name="csrf" content="([0-9a-f]+)">`).FindStringSubmatch(body)
	if m == nil {
		t.Fatal("the page carries no CSRF token")
	}
	return m[1]
}

func TestARequestWithoutTheAccessTokenIsRefused403(t *testing.T) {
	p := openPage(t, markedFleet(t))
	for _, path := range []string{"/", "/rows", "/inspect?host=host0000&service=s0", "/op/recoveries?host=host0000", "/static/desktop.js", "/?token=wrong"} {
		res, err := http.Get(p.ts.URL + path) // no cookie jar
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden || res.Header.Get("X-Stado-Refusal") != desktop.CodeTokenRequired {
			t.Errorf("GET %s without the token: %d %q, want 403 %s", path, res.StatusCode, res.Header.Get("X-Stado-Refusal"), desktop.CodeTokenRequired)
		}
		if strings.Contains(string(body), "host0000") {
			t.Errorf("GET %s without the token leaked fleet data: %s", path, body)
		}
	}
	if code, _ := p.get(t, "/rows"); code != 200 {
		t.Errorf("with the cookie /rows answered %d", code)
	}
}

func TestAStateChangingRequestWithoutTheCSRFTokenIsRefused(t *testing.T) {
	p := openPage(t, markedFleet(t))
	post := func(csrf, origin string, form url.Values) (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodPost, p.ts.URL+"/op/restart", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if csrf != "" {
			req.Header.Set(desktop.CSRFHeader, csrf)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		res, err := p.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, string(b)
	}
	form := url.Values{"host": {"host0000"}, "service": {"s0"}, "confirm": {"s0"}}
	tok := p.csrf(t)
	for _, c := range []struct{ name, csrf, origin string }{
		{"no token", "", ""},
		{"a wrong token", strings.Repeat("0", 64), ""},
		{"the token from another origin", tok, "http://evil.example"},
	} {
		res, _ := post(c.csrf, c.origin, form)
		if res.StatusCode != http.StatusForbidden || res.Header.Get("X-Stado-Refusal") != desktop.CodeCSRFRefused {
			t.Errorf("restart with %s: %d %q, want 403 %s", c.name, res.StatusCode, res.Header.Get("X-Stado-Refusal"), desktop.CodeCSRFRefused)
		}
	}
	// the token in a form field works as well as the header
	res, body := post("", "", url.Values{"host": {"host0000"}, "service": {"s0"}, "csrf": {tok}})
	if res.StatusCode != 200 || !strings.Contains(body, "data-confirm-restart") {
		t.Errorf("restart without confirmation: %d %s, want the confirmation asked", res.StatusCode, body)
	}
	// confirmed, but this page has no host channel: a refusal, not a success
	res, body = post(tok, p.ts.URL, form)
	if res.StatusCode != 200 || !strings.Contains(body, `data-code="`+string(refusal.NoManager)+`"`) || !strings.Contains(body, `data-ok="false"`) {
		t.Errorf("confirmed restart without a channel: %d %s, want the refusal %s", res.StatusCode, body, refusal.NoManager)
	}
}

func TestARequestAddressedToAnotherHostNameIsRefused(t *testing.T) {
	p := openPage(t, markedFleet(t))
	req, _ := http.NewRequest(http.MethodGet, p.ts.URL+"/rows", nil)
	req.Host = "attacker.example:80" // DNS rebinding: a name that resolves to loopback
	res, err := p.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden || res.Header.Get("X-Stado-Refusal") != desktop.CodeHostRefused {
		t.Errorf("Host attacker.example: %d %q", res.StatusCode, res.Header.Get("X-Stado-Refusal"))
	}
}

func TestTheDesktopListensOnLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", ":0", "192.168.1.10:7480", "example.com:7480", "7480"} {
		ln, err := desktop.Listen(addr)
		if err == nil {
			ln.Close()
			t.Errorf("Listen(%q) listened", addr)
			continue
		}
		if !refusal.Is(err, refusal.Usage) {
			t.Errorf("Listen(%q): %v, want a usage refusal", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0", "127.0.0.9:0"} {
		ln, err := desktop.Listen(addr)
		if err != nil {
			t.Errorf("Listen(%q): %v", addr, err)
			continue
		}
		ln.Close()
	}
}

func TestRowsAreMarkedFailingAttentionUnknownAndNeverHealthyWithoutASuccessfulAnswer(t *testing.T) {
	p := openPage(t, markedFleet(t))
	_, body := p.get(t, "/rows")
	row := func(host, svc string) string {
		re := regexp.MustCompile(`(?s)<tr class="row mark-[a-z-]+" data-host="` + host + `" data-service="` + svc + `".*?</tr>`)
		m := re.FindString(body)
		if m == "" {
			t.Fatalf("no row %s/%s in\n%s", host, svc, body)
		}
		return m
	}
	for _, c := range []struct {
		host, svc, mark string
		has             []string
	}{
		{"host0000", "s0", "failing", []string{"exit 3", "runs 5", "stderr: s0 is dying"}}, // a crash loop with its evidence
		{"host0000", "s1", "attention", []string{"answered 503", "vault sealed"}},          // a 503 with its body
		{"host0000", "s2", "attention", []string{"stood 9s"}},                              // a question that stood
		{"host0001", "s0", "unknown", []string{"beacon is 1m30s old", "1m30s"}},            // a stale beacon, with its age
		{"host0002", "s2", "no-verdict", nil},                                              // asked, no answer yet: not healthy
		{"host0002", "s1", "healthy", []string{"answered 200"}},
		{"host0002", "s0", "healthy", nil},
	} {
		r := row(c.host, c.svc)
		if !strings.Contains(r, `data-mark="`+c.mark+`"`) {
			t.Errorf("%s/%s: want mark %s in %s", c.host, c.svc, c.mark, r)
		}
		for _, h := range c.has {
			if !strings.Contains(r, h) {
				t.Errorf("%s/%s: want %q in %s", c.host, c.svc, h, r)
			}
		}
	}
	if strings.Contains(body, "hunter2") {
		t.Error("the table carries a declared environment value")
	}
}

func TestFilterAndSearchSelectRows(t *testing.T) {
	p := openPage(t, markedFleet(t))
	count := func(q string) int {
		_, body := p.get(t, "/rows?"+q)
		return strings.Count(body, `<tr class="row `)
	}
	for _, c := range []struct {
		q    string
		want int
	}{
		{"", 9},
		{"mark=failing", 1},
		{"mark=unknown", 3},
		{"mark=problems", 7},
		{"host=host0002", 3},
		{"q=vault", 1},
		{"q=HOST0000+s1", 1}, // words, case-insensitive, all must match
		{"q=nothing-like-this", 0},
	} {
		if got := count(c.q); got != c.want {
			t.Errorf("/rows?%s: %d rows, want %d", c.q, got, c.want)
		}
	}
}

func TestTheInspectorSaysMissingEvidenceAndMasksTheEnvironment(t *testing.T) {
	p := openPage(t, markedFleet(t))
	_, body := p.get(t, "/inspect?host=host0000&service=s2")
	body = html.UnescapeString(body)
	for _, want := range []string{"missing evidence", "API_TOKEN", "********", `"state": "stood"`} {
		if !strings.Contains(body, want) {
			t.Errorf("inspector of a stood question without a recovery lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "hunter2") {
		t.Error("the inspector carries a declared environment value or secret argument")
	}
	if !strings.Contains(body, "--token") {
		t.Error("the inspector hides an argument not marked secret")
	}
	_, body = p.get(t, "/inspect?host=host0000&service=nope")
	if !strings.Contains(body, `data-code="not_found"`) {
		t.Errorf("inspector of an undeclared row: %s", body)
	}
}

func TestTheInspectorShowsARecoveryStepByStep(t *testing.T) {
	rec := map[string]any{
		"kind": "stado.recovery", "state": "attempted", "when": t0, "service": "s1", "host": "host0000", "unit": "s1.service",
		"question":     map[string]any{"method": "GET", "path": "/work", "endpoint": "127.0.0.1:1", "repair": []string{"unmark"}},
		"declaration":  nil,
		"since":        t0,
		"repair_steps": []map[string]any{{"step": "unmark", "host": "host0000", "ok": true, "exit_code": 0, "at": t0}},
		"restart":      map[string]any{"host": "host0000", "unit": "s1.service", "scope": "system", "ok": true, "answer": "done", "pid": 4242, "at": t0},
		"alerts":       []map[string]any{{"channel": "hook", "type": "webhook", "ok": false, "cause": "answered 500"}},
		"complete":     true,
	}
	raw, _ := json.Marshal(rec)
	st := fleetFixture(t, 2, 2, t0, func(b *beacon.Beacon) {
		if b.Host == "host0000" {
			b.Units[1].Answering = &beacon.Answering{State: beacon.AnswerStood, WaitedSeconds: 5, BoundSeconds: 2, Recovery: raw,
				RecordingRefusal: &beacon.FileRefusal{Op: "append", File: "/root/.stado/service-recoveries.jsonl", Cause: "disk full"}}
		} else {
			b.PeerRecoveries = []beacon.PeerRecovery{{Service: "s1", Host: "host0000", Held: 2, WaitedSeconds: 7, BoundSeconds: 2, Recovery: raw}}
		}
	})
	p := openPage(t, st)
	_, body := p.get(t, "/inspect?host=host0000&service=s1")
	for _, want := range []string{"unmark", `<td class="exit-code">0</td>`, `<span class="restart-pid">4242</span>`, "hook", "answered 500",
		"recording_refusal", "disk full", "observed by <strong>host0001</strong>"} {
		if !strings.Contains(body, want) {
			t.Errorf("inspector lacks %q", want)
		}
	}
	if strings.Contains(body, "missing evidence") {
		t.Error("a stood question with a recovery reads missing evidence")
	}
}

func TestTheTableRefreshesWhenTheStoreChanges(t *testing.T) {
	st := markedFleet(t)
	srv, err := desktop.New(desktop.Config{Store: st, Now: func() time.Time { return t0 }, WatchEvery: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ln, err := desktop.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ctx, ln)
	base := "http://" + ln.Addr().String()
	get := func(path string) string {
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		req.AddCookie(&http.Cookie{Name: desktop.CookieName(portOf(t, base)), Value: srv.Token()})
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	var first struct{ Gen uint64 }
	json.Unmarshal([]byte(get("/changes?gen=999999")), &first) // answers at once with the current count
	done := make(chan string, 1)
	go func() { done <- get("/changes?gen=" + strconv(first.Gen)) }()
	time.Sleep(100 * time.Millisecond) // let the watcher take its first fingerprint
	if _, err := st.Put(ctx, store.BeaconPrefix+"host0002", []byte(`{}`), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-done:
		var next struct{ Gen uint64 }
		json.Unmarshal([]byte(got), &next)
		if next.Gen == first.Gen {
			t.Errorf("changes answered %s, want a new count", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a store change did not wake the page's watch")
	}
}

func strconv(n uint64) string { b, _ := json.Marshal(n); return string(b) }

func TestADriftedUnitIsMarkedForAttentionAndTheInspectorSaysWhyWithoutSSH(t *testing.T) {
	st := fleetFixture(t, 2, 2, t0, func(b *beacon.Beacon) {
		for i := range b.Units {
			b.Units[i].File = &beacon.FileCheck{Path: "/etc/systemd/system/" + b.Units[i].Unit}
		}
		if b.Host == "host0001" {
			b.Units[1].File.Drift, b.Units[1].File.Reason = true, "the installed bytes differ from the rendering from line 4"
		}
	})
	p := openPage(t, st)
	_, body := p.get(t, "/rows?mark=problems")
	if !strings.Contains(body, "drift: the installed bytes differ") || strings.Contains(body, "host0000") {
		t.Errorf("the problems view does not hold exactly the drifted unit:\n%s", body)
	}
	_, body = p.get(t, "/inspect?host=host0001&service=s1")
	if body = html.UnescapeString(body); !strings.Contains(body, `data-drift="true"`) || !strings.Contains(body, "from line 4") {
		t.Errorf("inspector of a drifted unit:\n%s", body)
	}
	_, body = p.get(t, "/inspect?host=host0000&service=s1")
	if !strings.Contains(html.UnescapeString(body), "as declared") {
		t.Errorf("inspector of a matching unit file:\n%s", body)
	}
}
