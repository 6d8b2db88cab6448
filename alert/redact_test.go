package alert

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
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
	// A closed port: the dial is refused.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	h := strings.TrimPrefix(hangup.URL, "http://")

	// echoing starts a server that answers 500 and echoes, in its body,
	// what say makes of the request: a server that echoes the request URL or
	// its Authorization header, in whatever spelling it likes.
	echoing := func(say func(r *http.Request) string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte("no such hook: " + say(r)))
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	// A server that puts the request URI in its status line's reason phrase.
	phrase := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		buf.WriteString("HTTP/1.1 502 bad hook " + r.RequestURI + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		buf.Flush()
	}))
	defer phrase.Close()
	ph := strings.TrimPrefix(phrase.URL, "http://")
	e := strings.TrimPrefix(echoing(func(r *http.Request) string { return r.Header.Get("Authorization") }), "http://")

	for _, tc := range []struct {
		name, url string
		secrets   []string
	}{
		// the plain form, token in the query
		{"query token", hangup.URL + "/hook?token=s3cr3t-tok", []string{"s3cr3t-tok"}},
		// net/http lower-cases the scheme it prints
		{"upper-case scheme", "HTTP://" + h + "/hook?access_token=UPPERsecret", []string{"UPPERsecret"}},
		// a space in the path is printed escaped (%20)
		{"space in path", hangup.URL + "/my hook/T0KEN-in-path-123?x=1", []string{"T0KEN-in-path-123"}},
		// non-ASCII in the path is printed percent-encoded
		{"non-ASCII path", hangup.URL + "/hóok/zażółć-token?k=v", []string{"zażółć-token"}},
		// a quote in the query is printed escaped inside %q
		{"quote in query", hangup.URL + `/hook?token=ab"cd-secret`, []string{`ab"cd-secret`}},
		// a backslash in the query, doubled by %q
		{"backslash in query", hangup.URL + `/hook?token=ab\cd-secret`, []string{`ab\cd-secret`}},
		// user info with a password
		{"password", "http://alice:pa55word-x@" + h + "/hook", []string{"pa55word-x"}},
		// a refused dial
		{"refused dial", closed + "/hook?token=dial-secret", []string{"dial-secret"}},
		// a server echoing the URL in a non-2xx body
		{"echoed in the body", echoing(func(r *http.Request) string { return r.URL.String() + " " + r.URL.RawQuery }) + "/hook?token=echo-secret", []string{"echo-secret"}},
		// the Authorization header net/http makes of the user info, echoed:
		// Basic base64("alice:pa55-w0rd")
		{"basic auth echoed", "http://alice:pa55-w0rd@" + e + "/hook", []string{"pa55-w0rd", base64.StdEncoding.EncodeToString([]byte("alice:pa55-w0rd"))}},
		// every byte of the token echoed as a percent escape (%73%33...)
		{"percent-encoded echo", echoing(func(r *http.Request) string { return percentAll(r.URL.Query().Get("token"), "%%%02X") }) + "/hook?token=s3cr3t-tok", []string{"s3cr3t-tok"}},
		// the same with lower-case hex digits
		{"lower-hex percent echo", echoing(func(r *http.Request) string { return percentAll(r.URL.Query().Get("token"), "%%%02x") }) + "/hook?token=s3cr3t-tok", []string{"s3cr3t-tok"}},
		// the URL spells a letter as %61; the server echoes it decoded
		{"escaped letter in the URL", echoing(func(r *http.Request) string { return r.URL.Query().Get("token") }) + "/hook?token=%61bc-s3cret", []string{"abc-s3cret"}},
		// the token echoed lower-cased
		{"lower-cased echo", echoing(func(r *http.Request) string { return strings.ToLower(r.URL.RawQuery) }) + "/hook?token=MiXeD-S3CRET", []string{"MiXeD-S3CRET"}},
		// the token echoed upper-cased
		{"upper-cased echo", echoing(func(r *http.Request) string { return strings.ToUpper(r.URL.RawQuery) }) + "/hook?token=mixed-s3cret", []string{"mixed-s3cret"}},
		// a path segment holding an escaped slash (%2F), echoed decoded and
		// without the rest of the path
		{"escaped slash in a path segment", echoing(func(r *http.Request) string { return strings.TrimPrefix(r.URL.Path, "/hook/") }) + "/hook/ab%2Fcd%2Fef12", []string{"ab/cd/ef12", "ab%2Fcd%2Fef12"}},
		// a path segment shorter than 8 bytes, echoed alone
		{"short path segment", echoing(func(r *http.Request) string { return "segment " + strings.TrimPrefix(r.URL.Path, "/h/") }) + "/h/k3y9z", []string{"k3y9z"}},
		// a URL that does not parse: the request is never built, and the
		// parse error net/http gives quotes the URL
		{"unparsable URL", "http://[::1/hook/p4th-tok?token=bad-url-secret", []string{"p4th-tok", "bad-url-secret"}},
		// the request URI in the status line's reason phrase
		{"reason phrase", "http://" + ph + "/hook/t0k3n?sig=phrase-secret", []string{"t0k3n", "phrase-secret"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &Alerter{Webhook: NewWebhookClient()}
			a.Webhook.RetryMax = 0
			a.Webhook.HTTPClient.Timeout = 2 * time.Second
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			out := a.Deliver(ctx, Elsewhere, []registry.AlertChannel{{Name: "ops", Webhook: &registry.WebhookAlert{URL: tc.url}}}, New(register.Recovery{Service: "s", Host: "h"}))
			if len(out) != 1 || out[0].OK {
				t.Fatalf("outcome %+v, want one failed delivery", out)
			}
			b, _ := json.Marshal(out[0])
			for _, secret := range tc.secrets {
				for _, text := range []string{out[0].Cause, out[0].Answer, string(b)} {
					if leaks(text, secret) {
						t.Fatalf("outcome %s leaks %q", b, secret)
					}
				}
			}
			if out[0].Cause == "" {
				t.Fatal("no cause at all")
			}
			t.Logf("cause: %s", out[0].Cause)
		})
	}
}

// percentAll spells every byte of s as a percent escape in format.
func percentAll(s, format string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, format, s[i])
	}
	return b.String()
}

// leaks says whether text holds secret in any spelling a reader could undo:
// as written, case-folded, percent-decoded (once or twice), or with its
// backslash escapes undone.
func leaks(text, secret string) bool {
	forms := []string{text}
	d := text
	for range 2 {
		d = percentDecode(d)
		forms = append(forms, d)
	}
	for _, f := range forms {
		f = backslashDecode(f)
		if strings.Contains(strings.ToLower(f), strings.ToLower(secret)) {
			return true
		}
	}
	return false
}

// backslashDecode undoes \\, \", \xHH and \u00HH in s and leaves the rest.
func backslashDecode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch {
			case s[i+1] == '\\' || s[i+1] == '"':
				b.WriteByte(s[i+1])
				i++
				continue
			case s[i+1] == 'x' && i+3 < len(s):
				if v, err := strconv.ParseUint(s[i+2:i+4], 16, 8); err == nil {
					b.WriteByte(byte(v))
					i += 3
					continue
				}
			case s[i+1] == 'u' && i+5 < len(s) && s[i+2:i+4] == "00":
				if v, err := strconv.ParseUint(s[i+4:i+6], 16, 8); err == nil {
					b.WriteByte(byte(v))
					i += 5
					continue
				}
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// percentDecode decodes every well-formed %XX in s and leaves the rest.
func percentDecode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// The redactor itself finds every secret part of the URL in any spelling a
// text may carry it, so a cause stays clean even if a message other than
// the webhook's answer (an error of net/http or of the dialer) spells it.
func TestRedactionFindsEverySpellingOfEverySecretPart(t *testing.T) {
	const u = "https://alice:pa55-w0rd@hooks.example/h/k3y9z/ab%2Fcd%2Fef12?token=MiXeD-S3CRET&sig=a+b%26c"
	basic := base64.StdEncoding.EncodeToString([]byte("alice:pa55-w0rd"))
	for _, tc := range []struct {
		name, msg, secret string
	}{
		// the password as written
		{"password", "auth pa55-w0rd refused", "pa55-w0rd"},
		// the Authorization header net/http sends for the user info
		{"basic auth base64", "got Authorization: Basic " + basic, basic},
		// the same in the URL-safe alphabet without padding
		{"basic auth raw url base64", "got " + base64.RawURLEncoding.EncodeToString([]byte("alice:pa55-w0rd")), "alice:pa55-w0rd"},
		// a query value lower-cased
		{"lower-cased value", "bad token mixed-s3cret", "MiXeD-S3CRET"},
		// a query value upper-cased
		{"upper-cased value", "bad token MIXED-S3CRET", "MiXeD-S3CRET"},
		// a single letter percent-encoded
		{"one escaped letter", "bad token %4DiXeD-S3CRET", "MiXeD-S3CRET"},
		// every byte percent-encoded, lower-case hex
		{"every byte escaped", "bad token " + percentAll("MiXeD-S3CRET", "%%%02x"), "MiXeD-S3CRET"},
		// percent-encoded twice (%25 for the %)
		{"escaped twice", "bad token %254DiXeD-S3CRET", "MiXeD-S3CRET"},
		// Go- or JSON-quoted escapes
		{"backslash escapes", `bad token \x4DiXeD-S3CRE\u0054`, "MiXeD-S3CRET"},
		// a path segment with escaped slashes, decoded
		{"escaped slash decoded", "no hook ab/cd/ef12", "ab/cd/ef12"},
		// the same segment with its slashes escaped in lower case
		{"escaped slash lower hex", "no hook ab%2fcd%2fef12", "ab/cd/ef12"},
		// a path segment of 5 bytes
		{"short path segment", "no hook k3y9z", "k3y9z"},
		// a query value with + for a space and an escaped &
		{"plus and escaped ampersand", "sig a b&c", "a b&c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := redactWebhookText(tc.msg, u)
			if leaks(got, tc.secret) || !strings.Contains(got, redacted) {
				t.Fatalf("redacted %q to %q: %q still readable", tc.msg, got, tc.secret)
			}
		})
	}
	// What is not a secret part stays readable: the host and the cause's
	// own words.
	if got := redactWebhookText("dial tcp hooks.example:443: connection refused", u); got != "dial tcp hooks.example:443: connection refused" {
		t.Errorf("an error without a secret became %q", got)
	}
}

// Whatever token a URL carries in its password, a path segment or a query
// value, and however a text re-spells it byte by byte (either case, a
// percent escape in either hex case, escaped twice, a backslash escape),
// the redacted text never holds it. Random tokens, fixed seed.
func TestRedactionHoldsForRandomTokensAndSpellings(t *testing.T) {
	rng := rand.New(rand.NewPCG(24, 8))
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~/+ :@"
	token := func() string {
		b := make([]byte, minSecretLen+rng.IntN(12))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	respell := func(s string) string {
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			c := s[i]
			switch rng.IntN(7) {
			case 0:
				b.WriteString(strings.ToUpper(string(c)))
			case 1:
				b.WriteString(strings.ToLower(string(c)))
			case 2:
				fmt.Fprintf(&b, "%%%02X", c)
			case 3:
				fmt.Fprintf(&b, "%%%02x", c)
			case 4:
				fmt.Fprintf(&b, "%%25%02X", c)
			case 5:
				fmt.Fprintf(&b, `\x%02x`, c)
			default:
				b.WriteByte(c)
			}
		}
		return b.String()
	}
	for i := range 2000 {
		tok := token()
		var raw string
		switch i % 3 {
		case 0: // the password
			raw = "https://" + url.UserPassword("bot", tok).String() + "@hooks.example/hook"
		case 1: // a path segment
			raw = "https://hooks.example/hook/" + url.PathEscape(tok)
		default: // a query value
			raw = "https://hooks.example/hook?token=" + url.QueryEscape(tok)
		}
		msg := "dial: " + respell(tok) + " refused"
		got := redactWebhookText(msg, raw)
		if leaks(got, tok) {
			t.Fatalf("url %q, text %q: redacted to %q, %q still readable", raw, msg, got, tok)
		}
	}
}
