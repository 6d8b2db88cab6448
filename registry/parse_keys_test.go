package registry_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/wisent/stado/registry"
)

// JSON and YAML read a document the same way: a key named twice, or named
// again in another case, is refused naming the field in both; a UTF-8
// byte-order mark at the start is read as nothing in both.
func TestJSONAndYAMLAgreeOnKeysAndTheByteOrderMark(t *testing.T) {
	const svc = `"name":"a","unit":"a.service"`
	for _, tc := range []struct {
		name, doc string
		field     string // "" means accepted
	}{
		// the same key twice: the last would win
		{"duplicate", `{"version":1,"targets":[{"name":"h","os":"linux","services":[{` + svc + `,"program":"/bin/a","program":"/bin/evil"}]}]}`, "targets[0].services[0].program"},
		// the same key in another case
		{"case variant", `{"version":1,"targets":[{"name":"h","os":"linux","services":[{` + svc + `,"program":"/bin/a","PROGRAM":"/bin/evil"}]}]}`, "targets[0].services[0].PROGRAM"},
		// a field only in another case
		{"upper-case field", `{"version":1,"TARGETS":[]}`, "TARGETS"},
		// a duplicate at the top
		{"duplicate version", `{"version":1,"version":1,"targets":[]}`, "version"},
		// env names are case-sensitive: two variables, accepted
		{"env FOO and foo", `{"version":1,"targets":[{"name":"h","os":"linux","services":[{` + svc + `,"program":"/bin/a","env":{"FOO":"1","foo":"2"}}]}]}`, ""},
		// the same env name twice
		{"env duplicate", `{"version":1,"targets":[{"name":"h","os":"linux","services":[{` + svc + `,"program":"/bin/a","env":{"FOO":"1","FOO":"2"}}]}]}`, "targets[0].services[0].env.FOO"},
		// a BOM before JSON
		{"JSON with a BOM", "\xef\xbb\xbf" + `{"version":1,"targets":[]}`, ""},
		// a BOM before YAML
		{"YAML with a BOM", "\xef\xbb\xbfversion: 1\ntargets: []\n", ""},
		// YAML refuses the duplicate too
		{"YAML duplicate", "version: 1\ntargets:\n- name: h\n  os: linux\n  os: darwin\n", "os"},
		// and the case variant
		{"YAML case variant", "version: 1\nVERSION: 1\ntargets: []\n", "VERSION"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := registry.Parse([]byte(tc.doc), "fleet")
			if tc.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !errors.Is(err, registry.ErrInvalid) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("err %v, want a refusal naming %s", err, tc.field)
			}
		})
	}
}

// TestYAMLMergeKeysAndInlineFieldsAreKnown: "<<: *defaults" and the unit
// settings beside a service's own fields are read as fields, while an
// unknown key inside a merged mapping is still refused at its path.
func TestYAMLMergeKeysAndInlineFieldsAreKnown(t *testing.T) {
	ok := "version: 1\nx-defaults: &d {program: /bin/a, description: web}\ntargets:\n- name: h\n  os: linux\n  services:\n  - <<: *d\n    name: a\n    unit: a.service\n"
	if _, err := registry.Parse([]byte(ok), "merge"); err == nil || !strings.Contains(err.Error(), "x-defaults") {
		t.Fatalf("Parse = %v, want only the unknown top-level x-defaults refused", err)
	}
	ok = "version: 1\ntargets:\n- name: h\n  os: linux\n  services:\n  - &s {name: a, unit: a.service, program: /bin/a, description: web}\n  - <<: *s\n    name: b\n    unit: b.service\n"
	d, err := registry.Parse([]byte(ok), "merge")
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Targets[0].Services[1]; got.Program != "/bin/a" || got.Description != "web" || got.Name != "b" {
		t.Fatalf("merged service = %+v", got)
	}
}
