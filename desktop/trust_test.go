package desktop_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/desktop"
)

func portOf(t *testing.T, base string) string {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

// servePage serves a page over the marked fleet on a loopback port until
// the test ends.
func servePage(t *testing.T, cfg desktop.Config) (*desktop.Server, net.Listener) {
	t.Helper()
	cfg.Store = markedFleet(t)
	cfg.Now = func() time.Time { return t0 }
	srv, err := desktop.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := desktop.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Serve(ctx, ln); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return srv, ln
}

// The address handed to a browser's command line (which ps shows every
// user) carries a code that works once, never the token itself.
func TestTheOpenedAddressWorksOnceAndCarriesNoToken(t *testing.T) {
	srv, ln := servePage(t, desktop.Config{})
	open := srv.OpenURL(ln)
	if strings.Contains(open, srv.Token()) || strings.Contains(open, "token=") {
		t.Fatalf("the browser's address %s carries the token", open)
	}
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	res, err := browser.Get(open)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 || res.Request.URL.RawQuery != "" {
		t.Fatalf("the first visit answered %d at %s, want the page without the code", res.StatusCode, res.Request.URL)
	}
	if res, err = browser.Get("http://" + ln.Addr().String() + "/rows"); err != nil || res.StatusCode != 200 {
		t.Fatalf("the browser's next request: %v %v", res.StatusCode, err)
	}
	res.Body.Close()
	// whoever read the code from ps comes second and is refused
	res, err = http.Get(open)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden || res.Header.Get("X-Stado-Refusal") != desktop.CodeTokenRequired {
		t.Fatalf("a second use of the code answered %d %q, want 403 token_required", res.StatusCode, res.Header.Get("X-Stado-Refusal"))
	}
}

// The cookie is named after the page's port: another loopback service the
// browser visits gets no cookie of this page's name, and a cookie set for
// another port's page opens nothing here.
func TestTheCookieIsNamedAfterThePort(t *testing.T) {
	srv, ln := servePage(t, desktop.Config{})
	base := "http://" + ln.Addr().String()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	res, err := c.Get(base + "/?token=" + url.QueryEscape(srv.Token()))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	u, _ := url.Parse(base)
	var names []string
	for _, ck := range jar.Cookies(u) {
		names = append(names, ck.Name)
	}
	if want := "stado_desktop_" + portOf(t, base); len(names) != 1 || names[0] != want {
		t.Fatalf("cookies %v, want exactly %s", names, want)
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/rows", nil)
	req.AddCookie(&http.Cookie{Name: desktop.CookieName("7480"), Value: srv.Token()})
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("another port's cookie answered %d, want 403", res.StatusCode)
	}
}

// Connections opened without the token, however many, neither stay open
// after their refusal nor keep the token holder out once the page is at
// its connection bound.
func TestConnectionsWithoutTheTokenCannotKeepTheHolderOut(t *testing.T) {
	srv, ln := servePage(t, desktop.Config{MaxConns: 8, HeaderTimeout: time.Minute, IdleTimeout: time.Minute})
	addr := ln.Addr().String()
	// a refused request closes its connection
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: "+addr+"\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if b, err := io.ReadAll(c); err != nil || !strings.Contains(string(b), "403") || !strings.Contains(string(b), "Connection: close") {
		t.Fatalf("a refused request's connection: %v\n%s", err, b)
	}
	c.Close()
	// 40 silent connections, five times the bound
	var silent []net.Conn
	for range 40 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		silent = append(silent, c)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/rows", nil)
	req.AddCookie(&http.Cookie{Name: desktop.CookieName(portOf(t, "http://"+addr)), Value: srv.Token()})
	client := &http.Client{Timeout: 30 * time.Second}
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("the token holder was kept out: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("the token holder got %d", res.StatusCode)
	}
	// the page holds no more than its bound: the rest were closed
	closed := 0
	for _, c := range silent {
		c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err == io.EOF {
			closed++
		}
	}
	if closed < len(silent)-8 {
		t.Fatalf("%d of %d silent connections were closed; the page keeps more than its bound of 8", closed, len(silent))
	}
}
