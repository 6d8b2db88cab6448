package channel

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/wisent/stado/refusal"
)

func TestServeVerifyHandsEveryDeclarationToTheHostOnce(t *testing.T) {
	host := &recordingHost{}
	var stdout, stderr bytes.Buffer
	stdin := `{"os":"linux","services":[{"service":{"name":"a","unit":"a.service","program":"/bin/a"},"port":8080,"address":"127.0.1.2"},` +
		`{"service":{"name":"b","unit":"b.service","scope":"user","program":"/bin/b"}}]}`
	if code := Serve(context.Background(), "verify", strings.NewReader(stdin), &stdout, &stderr, host); code != ExitOK {
		t.Fatalf("exit %d: %s %s", code, stdout.String(), stderr.String())
	}
	calls := host.Calls()
	if want := []hostCall{{Method: "Verify", Units: []string{"a.service", "b.service"}}}; !reflect.DeepEqual(calls, want) {
		t.Fatalf("host calls %+v, want %+v", calls, want)
	}
	if doc := decodeOne[ResultDocument](t, stdout.Bytes()); doc.Kind != KindResult || doc.Verb != VerbVerify {
		t.Fatalf("result document %+v", doc)
	}
}

func TestServeRefusesAVerifyRequestOutsideTheGrammar(t *testing.T) {
	many := make([]string, MaxVerifyServices+1)
	for i := range many {
		many[i] = fmt.Sprintf(`{"service":{"name":"s%d","unit":"s%d.service"}}`, i, i)
	}
	for _, tc := range []struct {
		name, original, stdin string
		code                  refusal.Code
	}{
		// verify takes its declarations on stdin, never as words
		{"words", "verify system a.service", `{"services":[]}`, refusal.InvalidArguments},
		// a unit name outside the grammar inside the document
		{"unit", "verify", `{"services":[{"service":{"name":"a","unit":"a;id.service"}}]}`, refusal.InvalidUnit},
		// a launchd label sent to a linux host
		{"other init system", "verify", `{"services":[{"service":{"name":"a","unit":"com.example.a"}}]}`, refusal.InvalidUnit},
		// a unit path outside the unit directories
		{"path", "verify", `{"services":[{"service":{"name":"a","unit":"a.service","unit_path":"/tmp/a.service"}}]}`, refusal.InvalidPath},
		// a scope that is neither
		{"scope", "verify", `{"services":[{"service":{"name":"a","unit":"a.service","scope":"root"}}]}`, refusal.InvalidScope},
		// a port beyond 65535
		{"port", "verify", `{"services":[{"service":{"name":"a","unit":"a.service"},"port":70000}]}`, refusal.InvalidPort},
		// a field the request does not have
		{"unknown field", "verify", `{"services":[],"shell":"sh"}`, refusal.InvalidContent},
		// more declarations than one call carries
		{"too many", "verify", `{"services":[` + strings.Join(many, ",") + `]}`, refusal.TooLong},
		// nothing on stdin
		{"empty", "verify", "", refusal.InvalidContent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host := &recordingHost{}
			var stdout, stderr bytes.Buffer
			code := Serve(context.Background(), tc.original, strings.NewReader(tc.stdin), &stdout, &stderr, host)
			if code != ExitRefused || len(host.Calls()) != 0 {
				t.Fatalf("exit %d, calls %+v", code, host.Calls())
			}
			if doc := decodeOne[RefusalDocument](t, stdout.Bytes()); doc.Code != string(tc.code) {
				t.Fatalf("code %s, want %s: %s", doc.Code, tc.code, doc.Message)
			}
		})
	}
}
