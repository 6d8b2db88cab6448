package desktop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/beacon"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/channel/local"
	"github.com/wisent/stado/desktop"
	"github.com/wisent/stado/fleet"
	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
	"github.com/wisent/stado/units"
	"github.com/wisent/stado/units/unitstest"
)

// apiCall is one request to the API: its method, path, token (Bearer),
// CSRF token and Origin, each left out when empty.
type apiCall struct {
	method, path, token, csrf, origin, host string
}

func (c apiCall) do(t *testing.T, base string) (*http.Response, desktop.APIAnswer, string) {
	t.Helper()
	req, _ := http.NewRequest(c.method, base+c.path, nil)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.csrf != "" {
		req.Header.Set(desktop.CSRFHeader, c.csrf)
	}
	if c.origin != "" {
		req.Header.Set("Origin", c.origin)
	}
	if c.host != "" {
		req.Host = c.host
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var a desktop.APIAnswer
	json.Unmarshal(b, &a)
	return res, a, string(b)
}

// apiBed is a page over three in-process hosts (each its own in-memory
// manager): api declared on host1-2 and, ensured earlier, still running on
// host3, whose beacon shows it undeclared.
type apiBed struct {
	srv *desktop.Server
	ts  *httptest.Server
	mem map[string]*unitstest.Memory
	st  store.Store
}

func newAPIBed(t *testing.T) *apiBed {
	t.Helper()
	st, err := store.OpenFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	doc := &registry.Document{Version: 1}
	api := registry.Service{Name: "api", Unit: "api.service", Scope: registry.ScopeUser, Program: "/usr/local/bin/api"}
	for i := 1; i <= 3; i++ {
		doc.Targets = append(doc.Targets, registry.Target{Name: fmt.Sprintf("host%d", i), OS: "linux", SSH: registry.SSH{Address: "127.0.0.1", Port: 1},
			Services: []registry.Service{api}})
	}
	if _, err := registry.Push(ctx, st, doc, 0, "fixture"); err != nil {
		t.Fatal(err)
	}
	b := &apiBed{mem: map[string]*unitstest.Memory{}, st: st}
	hosts := map[string]channel.Host{}
	for i := 1; i <= 3; i++ {
		name, home := fmt.Sprintf("host%d", i), t.TempDir()
		mem := unitstest.NewMemory(home)
		b.mem[name] = mem
		hosts[name] = &local.Host{GOOS: "linux", Home: home, Now: time.Now, After: func(time.Duration) <-chan time.Time { c := make(chan time.Time, 1); c <- time.Now(); return c },
			Manager: func(context.Context, string) (units.Manager, func(), error) { return mem, func() {}, nil }}
	}
	connect := func(tg registry.Target) channel.Host { return hosts[tg.Name] }
	f, err := fleet.Open(ctx, st, connect)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Ensure(ctx, fleet.EnsureOptions{Name: "api", All: true, Settle: time.Millisecond}, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := registry.Update(ctx, st, "host3 leaves api", func(d *registry.Document) error {
		tg, _ := d.Target("host3")
		tg.Services = nil
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		bc := beacon.Beacon{Kind: beacon.Kind, Version: beacon.FormatVersion, Host: fmt.Sprintf("host%d", i), Pass: 1, At: t0.Add(-time.Second), IntervalSeconds: 5, StaleAfterSeconds: 15}
		u := beacon.UnitReport{Unit: "api.service", State: beacon.StateActive, PID: 1000 + i}
		if i == 3 {
			bc.Undeclared = []beacon.UnitReport{u}
		} else {
			u.Service = "api"
			bc.Units = []beacon.UnitReport{u}
		}
		data, _ := json.Marshal(bc)
		if _, err := st.Put(ctx, store.BeaconPrefix+bc.Host, data, store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	b.srv, err = desktop.New(desktop.Config{Store: st, Connect: connect, Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	b.ts = httptest.NewServer(b.srv.Handler())
	t.Cleanup(b.ts.Close)
	return b
}

func (b *apiBed) csrf(t *testing.T) string {
	t.Helper()
	var s struct{ CSRF string }
	_, _, body := apiCall{method: "GET", path: "/api/v1/session", token: b.srv.Token()}.do(t, b.ts.URL)
	if err := json.Unmarshal([]byte(body), &s); err != nil || s.CSRF == "" {
		t.Fatalf("session: %v %s", err, body)
	}
	return s.CSRF
}

// Every route refuses a request without the token, and every POST route
// one without the CSRF token or from another origin, before any work:
// JSON with the code, and nothing changed on any host.
func TestTheAPIRefusesUnauthenticatedAndCrossSiteRequests(t *testing.T) {
	b := newAPIBed(t)
	tok, csrf := b.srv.Token(), b.csrf(t)
	posts := []string{"/api/v1/services/api/ensure", "/api/v1/services/api/converge", "/api/v1/services/api/retire?host=host1"}
	var cases []struct {
		name string
		c    apiCall
		code string
	}
	add := func(name string, c apiCall, code string) {
		cases = append(cases, struct {
			name string
			c    apiCall
			code string
		}{name, c, code})
	}
	for _, p := range append([]string{"/api/v1/services", "/api/v1/session"}, posts...) {
		m := "POST"
		if !strings.Contains(p, "/api/v1/services/") {
			m = "GET"
		}
		add("no token", apiCall{method: m, path: p, csrf: csrf}, desktop.CodeTokenRequired)
		add("a wrong token", apiCall{method: m, path: p, token: strings.Repeat("0", 64), csrf: csrf}, desktop.CodeTokenRequired)
		add("another site's host name", apiCall{method: m, path: p, token: tok, csrf: csrf, host: "evil.example"}, desktop.CodeHostRefused)
	}
	for _, p := range posts {
		add("no CSRF token", apiCall{method: "POST", path: p, token: tok}, desktop.CodeCSRFRefused)
		add("a wrong CSRF token", apiCall{method: "POST", path: p, token: tok, csrf: strings.Repeat("0", 64)}, desktop.CodeCSRFRefused)
		add("another origin", apiCall{method: "POST", path: p, token: tok, csrf: csrf, origin: "http://evil.example"}, desktop.CodeCSRFRefused)
	}
	for _, c := range cases {
		res, a, body := c.c.do(t, b.ts.URL)
		if res.StatusCode != http.StatusForbidden || res.Header.Get("X-Stado-Refusal") != c.code || a.Kind != desktop.APIRefusalKind || a.Error == nil || a.Error.Code != c.code {
			t.Errorf("%s %s with %s: %d %s, want 403 %s", c.c.method, c.c.path, c.name, res.StatusCode, body, c.code)
		}
		if strings.Contains(body, "host1") || strings.Contains(body, b.srv.Token()) {
			t.Errorf("%s %s with %s leaked: %s", c.c.method, c.c.path, c.name, body)
		}
	}
	for host, m := range b.mem {
		if m.Calls["Remove"] != 0 || m.Calls["Restart"] != 0 || m.Calls["Install"] != 1 {
			t.Fatalf("%s was acted on by refused requests: %v", host, m.Calls)
		}
	}
}

func TestTheAPIListsServiceRowsAsJSON(t *testing.T) {
	b := newAPIBed(t)
	res, _, body := apiCall{method: "GET", path: "/api/v1/services?host=host1", token: b.srv.Token()}.do(t, b.ts.URL)
	var doc struct {
		Kind string
		Rows []struct{ Host, Service, State string }
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil || res.StatusCode != 200 || doc.Kind != desktop.RowsKind || len(doc.Rows) != 1 || doc.Rows[0].Service != "api" || doc.Rows[0].State != "active" {
		t.Fatalf("GET /api/v1/services: %d %v %s", res.StatusCode, err, body)
	}
}

// converge through the API: the dry run plans host3's retire and changes
// nothing; the run retires host3's copy and leaves host1-2 as they ran.
func TestTheAPIConvergesAServiceAndAnswersPerHost(t *testing.T) {
	b := newAPIBed(t)
	tok, csrf := b.srv.Token(), b.csrf(t)
	pid := func(h string) int { v, _ := b.mem[h].Show(context.Background(), "api.service"); return v.PID }
	pid1, pid2 := pid("host1"), pid("host2")
	type result struct {
		Rows []fleet.ConvergeRow `json:"results"`
	}
	read := func(a desktop.APIAnswer) result {
		var r result
		raw, _ := json.Marshal(a.Result)
		json.Unmarshal(raw, &r)
		return r
	}
	res, a, body := apiCall{method: "POST", path: "/api/v1/services/api/converge?dry_run=true", token: tok, csrf: csrf}.do(t, b.ts.URL)
	if r := read(a); res.StatusCode != 200 || !a.OK || len(r.Rows) != 3 || r.Rows[2].Host != "host3" || r.Rows[2].Outcome != fleet.OutcomePlanned || b.mem["host3"].Calls["Remove"] != 0 {
		t.Fatalf("converge dry run: %d %s", res.StatusCode, body)
	}
	res, a, body = apiCall{method: "POST", path: "/api/v1/services/api/converge", token: tok, csrf: csrf}.do(t, b.ts.URL)
	r := read(a)
	if res.StatusCode != 200 || !a.OK || len(r.Rows) != 3 || r.Rows[2].Action != fleet.ConvergeRetire || r.Rows[2].Outcome != fleet.OutcomeDone {
		t.Fatalf("converge: %d %s", res.StatusCode, body)
	}
	if v, _ := b.mem["host3"].Show(context.Background(), "api.service"); v.State != units.StateMissing || pid("host1") != pid1 || pid("host2") != pid2 {
		t.Fatalf("after converge host3 is %s, host1 pid %d (was %d), host2 pid %d (was %d)", v.State, pid("host1"), pid1, pid("host2"), pid2)
	}
	// the refusals of an operation: a service nothing declares, a retire without its host, a route that is not there
	for _, c := range []struct {
		call   apiCall
		status int
		code   refusal.Code
	}{
		{apiCall{method: "POST", path: "/api/v1/services/nosuch/converge", token: tok, csrf: csrf}, 404, refusal.NotFound},
		{apiCall{method: "POST", path: "/api/v1/services/api/retire", token: tok, csrf: csrf}, 400, refusal.Usage},
		{apiCall{method: "POST", path: "/api/v1/services/api/retire?host=host3", token: tok, csrf: csrf}, 404, refusal.NotFound},
		{apiCall{method: "GET", path: "/api/v1/nosuch", token: tok}, 404, refusal.NotFound},
	} {
		res, a, body := c.call.do(t, b.ts.URL)
		if res.StatusCode != c.status || a.Error == nil || a.Error.Code != string(c.code) || a.OK {
			t.Errorf("%s %s: %d %s, want %d %s", c.call.method, c.call.path, res.StatusCode, body, c.status, c.code)
		}
	}
}

func TestTheAPIEnsuresAndRetiresPerHost(t *testing.T) {
	b := newAPIBed(t)
	tok, csrf := b.srv.Token(), b.csrf(t)
	res, a, body := apiCall{method: "POST", path: "/api/v1/services/api/ensure", token: tok, csrf: csrf}.do(t, b.ts.URL)
	if res.StatusCode != 200 || !a.OK || !strings.Contains(body, `"host": "host1"`) || !strings.Contains(body, `"host": "host2"`) || strings.Contains(body, `"host": "host3"`) {
		t.Fatalf("ensure: %d %s", res.StatusCode, body)
	}
	res, a, body = apiCall{method: "POST", path: "/api/v1/services/api/retire?host=host2", token: tok, csrf: csrf}.do(t, b.ts.URL)
	if v, _ := b.mem["host2"].Show(context.Background(), "api.service"); res.StatusCode != 200 || !a.OK || v.State != units.StateMissing {
		t.Fatalf("retire: %d %s (host2 %s)", res.StatusCode, body, v.State)
	}
}

// The page's ensure and retire ask for a confirmation naming the service,
// change nothing until they have it, and then show each host's result.
func TestThePagesEnsureAndRetireAskForConfirmationThenShowEachHost(t *testing.T) {
	b := newAPIBed(t)
	csrf := b.csrf(t)
	post := func(op, form string) string {
		req, _ := http.NewRequest("POST", b.ts.URL+"/op/"+op, strings.NewReader(form))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", "Bearer "+b.srv.Token())
		req.Header.Set(desktop.CSRFHeader, csrf)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return string(body)
	}
	installs := b.mem["host1"].Calls["Install"]
	if body := post("ensure", "service=api"); !strings.Contains(body, "data-confirm-op") || b.mem["host1"].Calls["Install"] != installs {
		t.Fatalf("unconfirmed ensure:\n%s", body)
	}
	body := post("ensure", "service=api&confirm=api")
	for _, h := range []string{"host1", "host2"} {
		if !strings.Contains(body, `data-host="`+h+`" data-action="ensure" data-outcome="done"`) {
			t.Fatalf("confirmed ensure lacks %s's row:\n%s", h, body)
		}
	}
	if body := post("retire", "service=api&host=host2&confirm=other"); !strings.Contains(body, "data-confirm-op") || b.mem["host2"].Calls["Remove"] != 0 {
		t.Fatalf("a retire confirming another name:\n%s", body)
	}
	body = post("retire", "service=api&host=host2&confirm=api")
	if v, _ := b.mem["host2"].Show(context.Background(), "api.service"); !strings.Contains(body, `data-host="host2" data-action="retire" data-outcome="done"`) || v.State != units.StateMissing {
		t.Fatalf("confirmed retire (host2 %s):\n%s", v.State, body)
	}
}

// The page's converge asks for confirmation with the dry run's plan per
// host and changes nothing until confirmed; then each host's result.
func TestThePagesConvergeShowsThePlanThenEachHostsResult(t *testing.T) {
	b := newAPIBed(t)
	csrf := b.csrf(t)
	post := func(form string) string {
		req, _ := http.NewRequest("POST", b.ts.URL+"/op/converge", strings.NewReader(form))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", "Bearer "+b.srv.Token())
		req.Header.Set(desktop.CSRFHeader, csrf)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return string(body)
	}
	body := post("service=api")
	if !strings.Contains(body, "data-confirm-op") || !strings.Contains(body, `data-host="host3" data-action="retire" data-outcome="planned"`) || b.mem["host3"].Calls["Remove"] != 0 {
		t.Fatalf("unconfirmed converge:\n%s", body)
	}
	body = post("service=api&confirm=api")
	if !strings.Contains(body, `data-host="host3" data-action="retire" data-outcome="done"`) || !strings.Contains(body, `data-host="host1" data-action="ensure" data-outcome="done"`) || b.mem["host3"].Calls["Remove"] != 1 {
		t.Fatalf("confirmed converge:\n%s", body)
	}
}
