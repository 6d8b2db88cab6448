package resolver

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The 503 a held service's other callers get names the service and how
// long its oldest request waited, never that request's line, caller or
// query; the waiting list keeps the line a peer needs without its query.
func TestRefusalsNeverShowAnotherClientsRequest(t *testing.T) {
	at := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		oldest   Wait
		secrets  []string
		recorded string // the request line as the waiting list keeps it
	}{
		// an access token in the query
		{"query token", Wait{Client: "127.0.0.7:40112", RequestLine: "GET /v1/models?access_token=tok-123 HTTP/1.1"},
			[]string{"tok-123", "access_token", "127.0.0.7", "/v1/models"}, "GET /v1/models HTTP/1.1"},
		// a fragment and an encoded query
		{"fragment", Wait{Client: "10.0.0.9:1", RequestLine: "POST /hook?sig=a%3Db#frag HTTP/1.1"},
			[]string{"sig=", "frag", "10.0.0.9", "/hook"}, "POST /hook HTTP/1.1"},
		// a declared client name
		{"named client", Wait{Client: "billing-batch", RequestLine: "GET /private/report HTTP/2.0"},
			[]string{"billing-batch", "/private/report"}, "GET /private/report HTTP/2.0"},
		// an absolute-form target with user info and query
		{"absolute form", Wait{Client: "127.0.0.1:5", RequestLine: "GET http://u:pw@svc/x?k=v HTTP/1.1"},
			[]string{"u:pw", "k=v", "127.0.0.1:5"}, "GET http://u:pw@svc/x HTTP/1.1"},
		// a TCP client's first line
		{"tcp line", Wait{Client: "127.0.0.3:9", RequestLine: "AUTH hunter2"},
			[]string{"hunter2", "127.0.0.3"}, "AUTH hunter2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.oldest.Service, tc.oldest.Host, tc.oldest.Endpoint = "brama", "host2", "127.0.1.2:8080"
			tc.oldest.AcceptedAt, tc.oldest.Phase = at.Add(-20*time.Second), PhaseAnswer
			e := &HeldError{Service: "brama", Host: "host2", Oldest: tc.oldest, Held: 2, Bound: 10 * time.Second, At: at}
			resp := e.response(nil)
			body, _ := io.ReadAll(resp.Body)
			var hdr strings.Builder
			_ = resp.Header.Write(&hdr)
			for _, s := range tc.secrets {
				for where, text := range map[string]string{"message": e.Error(), "body": string(body), "headers": hdr.String()} {
					if strings.Contains(text, s) {
						t.Errorf("the %s shows %q of another client's request: %s", where, s, text)
					}
				}
			}
			if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(e.Error(), "20s") || !strings.Contains(string(body), `"held":2`) {
				t.Errorf("the refusal lost what it must say: %d %s", resp.StatusCode, body)
			}
			if got := RequestLineWithoutQuery(tc.oldest.RequestLine); got != tc.recorded {
				t.Errorf("recorded line %q, want %q", got, tc.recorded)
			}
		})
	}
}
