package catalog

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestAnsweringValidationFollowsTheSeedRules(t *testing.T) {
	type want struct{ path, msg string }
	cases := []struct {
		name string
		raw  string
		want []want // nil: valid
	}{
		// The skarbiec declaration as the seed shows it, in YAML.
		{"skarbiec yaml", "method: GET\npath: /readyz\nrepair:\n- crypto\n- audit-lock\n", nil},
		// The same in JSON.
		{"json form", `{"method":"GET","path":"/readyz","repair":["crypto","audit-lock"]}`, nil},
		// A body is any JSON value; brama sends a chat request.
		{"body object", `{"method":"POST","path":"/v1/chat/completions","body":{"model":"m","messages":[]}}`, nil},
		// A body may be written as YAML too.
		{"body yaml", "method: POST\npath: /v1/x\nbody:\n  a: 1\n", nil},
		// Omitted repair: only the restart is declared.
		{"repair omitted", "method: GET\npath: /readyz\n", nil},
		// Empty repair list: only the restart is declared.
		{"repair empty", "method: GET\npath: /readyz\nrepair: []\n", nil},
		// Null repair reads as omitted.
		{"repair null", "method: GET\npath: /readyz\nrepair:\n", nil},
		// A path may carry a query string.
		{"path with query", "method: GET\npath: /api/release/object?uri=stado://releases/answering-probe\n", nil},
		// The path "/" alone starts with /.
		{"root path", "method: GET\npath: /\n", nil},
		// Any capitals-only method is accepted, not only the common ones.
		{"uncommon method", "method: PROPFIND\npath: /\n", nil},

		// Lowercase method is not in capitals.
		{"method lowercase", "method: get\npath: /readyz\n", []want{{"method", "capitals"}}},
		// Mixed case is not in capitals.
		{"method mixed", "method: Post\npath: /\n", []want{{"method", "capitals"}}},
		// An empty method is not a method in capitals.
		{"method empty", "method: \"\"\npath: /\n", []want{{"method", "capitals"}}},
		// Digits and dashes are not capitals.
		{"method digits", "method: GET2\npath: /\n", []want{{"method", "capitals"}}},
		// Non-ASCII capitals are not A-Z.
		{"method non-ascii", "method: GÉT\npath: /\n", []want{{"method", "capitals"}}},
		// A method that is not a string.
		{"method number", "method: 42\npath: /\n", []want{{"method", "must be a string"}}},
		// A missing method.
		{"method missing", "path: /readyz\n", []want{{"method", "missing"}}},
		// A path without the leading slash.
		{"path relative", "method: GET\npath: readyz\n", []want{{"path", "must start with /"}}},
		// A full URL is not a path.
		{"path url", "method: GET\npath: http://127.0.0.1/readyz\n", []want{{"path", "must start with /"}}},
		// An empty path.
		{"path empty", "method: GET\npath: \"\"\n", []want{{"path", "must start with /"}}},
		// A missing path.
		{"path missing", "method: GET\n", []want{{"path", "missing"}}},
		// repair must be a list, not one name.
		{"repair scalar", "method: GET\npath: /\nrepair: crypto\n", []want{{"repair", "must be a list"}}},
		// repair must be a list, not a mapping.
		{"repair mapping", "method: GET\npath: /\nrepair: {crypto: true}\n", []want{{"repair", "must be a list"}}},
		// Each step name must be non-empty.
		{"repair empty name", "method: GET\npath: /\nrepair: [crypto, \"\"]\n", []want{{"repair[1]", "non-empty step name"}}},
		// Each step name must be a string.
		{"repair number", "method: GET\npath: /\nrepair: [crypto, 3]\n", []want{{"repair[1]", "non-empty step name"}}},
		// A null item is not a step name.
		{"repair null item", `{"method":"GET","path":"/","repair":[null]}`, []want{{"repair[0]", "non-empty step name"}}},
		// A nested list is not a step name.
		{"repair nested", `{"method":"GET","path":"/","repair":[["crypto"]]}`, []want{{"repair[0]", "non-empty step name"}}},
		// A field outside method, path, body, repair.
		{"extra field", "method: GET\npath: /\ntimeout: 5\n", []want{{"timeout", "unknown field"}}},
		// Field names are case-sensitive: Method is not method.
		{"field case", "Method: GET\nmethod: GET\npath: /\n", []want{{"Method", "unknown field"}}},
		// A field given twice.
		{"duplicate field", "method: GET\nmethod: POST\npath: /\n", []want{{"method", "given twice"}}},
		// The declaration must be a mapping.
		{"not a mapping", "- GET\n- /\n", []want{{"(document)", "must be a mapping"}}},
		// Every violation is reported, not only the first.
		{"all at once", "method: get\npath: x\nrepair: [\"\"]\nport: 1\n", []want{
			{"port", "unknown field"}, {"method", "capitals"}, {"path", "must start with /"}, {"repair[0]", "non-empty"},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ValidateAnswering([]byte(tc.raw))
			if len(got) != len(tc.want) {
				t.Fatalf("got %d violation(s) %v, want %d %v", len(got), got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if got[i].Path != w.path || !strings.Contains(got[i].Message, w.msg) {
					t.Errorf("violation %d = %s, want path %s with %q", i, got[i], w.path, w.msg)
				}
			}
		})
	}
}

func TestAnsweringViolationsNameTheirLine(t *testing.T) {
	got := ValidateAnswering([]byte("method: GET\npath: readyz\n"))
	if len(got) != 1 || !strings.Contains(got[0].Message, "(line 2)") {
		t.Fatalf("got %v, want one violation naming line 2", got)
	}
}

func TestAnsweringDeclarationDecodesItsFields(t *testing.T) {
	c := &checker{}
	n := parseNode([]byte("method: POST\npath: /v1/chat/completions\nbody:\n  model: m\n  max_tokens: 1\nrepair: [a, b]\n"), c)
	a := c.answering(n, "")
	if len(c.out) > 0 || a == nil {
		t.Fatalf("violations %v", c.out)
	}
	if a.Method != "POST" || a.Path != "/v1/chat/completions" || !slices.Equal(a.Repair, []string{"a", "b"}) {
		t.Fatalf("decoded %+v", a)
	}
	if string(a.Body) != `{"max_tokens":1,"model":"m"}` {
		t.Fatalf("body %s, want compact JSON", a.Body)
	}
	out, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	if vs := ValidateAnswering(out); vs != nil {
		t.Fatalf("its own JSON is refused: %v", vs)
	}
}

func TestSameQuestionComparesMethodPathAndBodyButNotRepair(t *testing.T) {
	base := &Answering{Method: "POST", Path: "/x", Body: json.RawMessage(`{"a": 1}`), Repair: []string{"s"}}
	cases := []struct {
		name       string
		other      *Answering
		question   bool
		sameRepair bool
	}{
		// Same question, body spaced differently, same repair.
		{"same", &Answering{Method: "POST", Path: "/x", Body: json.RawMessage(`{"a":1}`), Repair: []string{"s"}}, true, true},
		// Another method is another question.
		{"method", &Answering{Method: "PUT", Path: "/x", Body: base.Body, Repair: []string{"s"}}, false, true},
		// Another path is another question.
		{"path", &Answering{Method: "POST", Path: "/y", Body: base.Body, Repair: []string{"s"}}, false, true},
		// Another body is another question.
		{"body", &Answering{Method: "POST", Path: "/x", Body: json.RawMessage(`{"a":2}`), Repair: []string{"s"}}, false, true},
		// No body is another question than a body.
		{"no body", &Answering{Method: "POST", Path: "/x", Repair: []string{"s"}}, false, true},
		// Changed repair steps keep the question but not the repair.
		{"repair", &Answering{Method: "POST", Path: "/x", Body: base.Body, Repair: []string{"s", "t"}}, true, false},
		// No declaration at all.
		{"nil", nil, false, false},
	}
	for _, tc := range cases {
		if got := base.SameQuestion(tc.other); got != tc.question {
			t.Errorf("%s: SameQuestion = %v, want %v", tc.name, got, tc.question)
		}
		if got := base.SameRepair(tc.other); got != tc.sameRepair {
			t.Errorf("%s: SameRepair = %v, want %v", tc.name, got, tc.sameRepair)
		}
	}
	var none *Answering
	if !none.SameQuestion(nil) || !none.SameRepair(&Answering{Repair: []string{}}) {
		t.Error("nil declarations must compare equal, and nil repair equal to empty")
	}
}
