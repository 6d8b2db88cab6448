package alert

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wisent/stado/register"
	"github.com/wisent/stado/registry"
)

// A webhook URL may carry a token; no spelling of it reaches an alert's
// cause, whether net/http prints the URL as the registry wrote it or not.
func TestWebhookSecretsNeverReachTheAlertCause(t *testing.T) {
	// A server that hangs up on every request: each delivery ends in an
	// error that net/http formats with the URL.
	hangup := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			c.Close()
		}
	}))
	defer hangup.Close()
	// A server that answers 500 and echoes the request URL in its body.
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte("no such hook: " + r.URL.String() + " " + r.URL.RawQuery))
	}))
	defer echo.Close()
	// A closed port: the dial is refused.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	h := strings.TrimPrefix(hangup.URL, "http://")

	for _, tc := range []struct {
		name, url, secret string
	}{
		// the plain form, token in the query
		{"query token", hangup.URL + "/hook?token=s3cr3t-tok", "s3cr3t-tok"},
		// net/http lower-cases the scheme it prints
		{"upper-case scheme", "HTTP://" + h + "/hook?access_token=UPPERsecret", "UPPERsecret"},
		// a space in the path is printed escaped (%20)
		{"space in path", hangup.URL + "/my hook/T0KEN-in-path-123?x=1", "T0KEN-in-path-123"},
		// non-ASCII in the path is printed percent-encoded
		{"non-ASCII path", hangup.URL + "/hóok/zażółć-token?k=v", "zażółć-token"},
		// a quote in the query is printed escaped inside %q
		{"quote in query", hangup.URL + `/hook?token=ab"cd-secret`, `ab"cd-secret`},
		// a backslash in the query, doubled by %q
		{"backslash in query", hangup.URL + `/hook?token=ab\cd-secret`, `ab\cd-secret`},
		// user info with a password
		{"password", "http://alice:pa55word-x@" + h + "/hook", "pa55word-x"},
		// a refused dial
		{"refused dial", closed + "/hook?token=dial-secret", "dial-secret"},
		// a server echoing the URL in a non-2xx body
		{"echoed in the body", echo.URL + "/hook?token=echo-secret", "echo-secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &Alerter{Webhook: NewWebhookClient()}
			a.Webhook.RetryMax = 0
			a.Webhook.HTTPClient.Timeout = 2 * time.Second
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			out := a.Deliver(ctx, []registry.AlertChannel{{Name: "ops", Webhook: &registry.WebhookAlert{URL: tc.url}}}, New(register.Recovery{Service: "s", Host: "h"}))
			if len(out) != 1 || out[0].OK {
				t.Fatalf("outcome %+v, want one failed delivery", out)
			}
			b, _ := json.Marshal(out[0])
			for _, leak := range []string{tc.secret, strings.ReplaceAll(tc.secret, `\`, `\\`)} {
				if strings.Contains(out[0].Cause, leak) || strings.Contains(string(b), leak) {
					t.Fatalf("cause %q leaks %q", out[0].Cause, leak)
				}
			}
			if out[0].Cause == "" {
				t.Fatal("no cause at all")
			}
			t.Logf("cause: %s", out[0].Cause)
		})
	}
}
