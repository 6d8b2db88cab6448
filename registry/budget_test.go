package registry

import (
	"errors"
	"strings"
	"testing"

	"github.com/wisent/stado/store"
)

// padJSON builds {"x":[<elems>],"p":"ppp..."} of exactly size bytes (at
// least as long as it must be): 5 nodes beside the elements.
func padJSON(elems []string, size int) []byte {
	head := `{"x":[` + strings.Join(elems, ",") + `],"p":"`
	pad := max(0, size-len(head)-2)
	return []byte(head + strings.Repeat("p", pad) + `"}`)
}

// padYAML builds "x: [<elems>]\np: ppp...\n" of size bytes: 7 nodes (the
// mapping, two keys, two ':' values, the list, ppp) and 1 mapping beside
// the elements.
func padYAML(elems []string, size int) []byte {
	head := "x: [" + strings.Join(elems, ",") + "]\np: "
	pad := max(1, size-len(head)-1)
	return []byte(head + strings.Repeat("p", pad) + "\n")
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func nested(open, close string, depth int) string {
	return strings.Repeat(open, depth) + strings.Repeat(close, depth)
}

func checkBudget(data []byte) error {
	if DetectFormat(data) == FormatJSON {
		return checkJSONBudget(data, "t")
	}
	_, err := checkYAMLBudget(data, "t")
	return err
}

// TestParseBudget tries each limit at the limit (accepted by the scan) and
// one past it (refused naming the limit, its line and offset), in both
// formats.
func TestParseBudget(t *testing.T) {
	big := MaxDocumentBytes
	small := 40_000 // nodes limit 4096+10000, mappings 4096+1250
	smallNodes, smallMaps := budgetFor(small)
	cases := []struct {
		name      string
		at, past  []byte
		limit     string
		wantLine  int
		wantBytes int // a refusal names an offset at or past this
	}{
		// The absolute node limit, in a document of the largest size.
		{"json nodes", padJSON(repeat("1", MaxDocumentNodes-5), big), padJSON(repeat("1", MaxDocumentNodes-4), big), "nodes", 1, 2 * (MaxDocumentNodes - 5)},
		{"yaml nodes", padYAML(repeat("a", MaxDocumentNodes-7), big), padYAML(repeat("a", MaxDocumentNodes-6), big), "nodes", 2, 2 * (MaxDocumentNodes - 7)},
		// The node limit proportional to size, in a small document.
		{"json nodes per byte", padJSON(repeat("1", smallNodes-5), small), padJSON(repeat("1", smallNodes-4), small), "nodes", 1, 2 * (smallNodes - 5)},
		{"yaml nodes per byte", padYAML(repeat("a", smallNodes-7), small), padYAML(repeat("a", smallNodes-6), small), "nodes", 2, 2 * (smallNodes - 7)},
		// Mappings: {} counts one node and one mapping.
		{"json mappings", padJSON(repeat("{}", MaxDocumentMappings-1), big), padJSON(repeat("{}", MaxDocumentMappings), big), "mappings", 1, 3 * (MaxDocumentMappings - 1)},
		{"yaml mappings", padYAML(repeat("{}", MaxDocumentMappings-1), big), padYAML(repeat("{}", MaxDocumentMappings), big), "mappings", 1, 3 * (MaxDocumentMappings - 1)},
		{"json mappings per byte", padJSON(repeat("{}", smallMaps-1), small), padJSON(repeat("{}", smallMaps), small), "mappings", 1, 3 * (smallMaps - 1)},
		// Depth: the document mapping is level 1, each bracket one more.
		{"json depth", []byte(`{"x":` + nested("[", "]", MaxDocumentDepth-1) + "}"), []byte(`{"x":` + nested("[", "]", MaxDocumentDepth) + "}"), "depth", 1, 5 + MaxDocumentDepth - 1},
		{"yaml flow depth", []byte("version: 1\nx: " + nested("[", "]", MaxDocumentDepth-1) + "\n"), []byte("version: 1\nx: " + nested("[", "]", MaxDocumentDepth) + "\n"), "depth", 2, 14 + MaxDocumentDepth - 1},
		{"yaml block depth", []byte(blockNest(MaxDocumentDepth)), []byte(blockNest(MaxDocumentDepth + 1)), "depth", MaxDocumentDepth + 1, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := checkBudget(c.at); err != nil {
				t.Fatalf("at the limit: %v", err)
			}
			err := checkBudget(c.past)
			var be *BudgetError
			if !errors.As(err, &be) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("one past the limit: %v, want a *BudgetError", err)
			}
			if be.Limit != c.limit || be.Line != c.wantLine || be.Offset < c.wantBytes {
				t.Fatalf("refusal = %+v, want limit %s at line %d, offset >= %d", be, c.limit, c.wantLine, c.wantBytes)
			}
			if msg := err.Error(); !strings.Contains(msg, c.limit+" limit") || !strings.Contains(msg, "line ") || !strings.Contains(msg, "byte ") {
				t.Fatalf("message %q does not name the limit, line and byte", msg)
			}
		})
	}
}

// blockNest is a block mapping nested depth levels deep: a: / b: / ...,
// each key on its own line one column further in.
func blockNest(depth int) string {
	var b strings.Builder
	for i := 0; i < depth; i++ {
		b.WriteString(strings.Repeat(" ", i) + "k:\n")
	}
	return b.String()
}

// TestParseRefusesPastBudgetBeforeDecoding: Parse and the stored-envelope
// read return the *BudgetError, not a decoder's error.
func TestParseRefusesPastBudgetBeforeDecoding(t *testing.T) {
	for _, data := range [][]byte{
		padJSON(repeat("1", MaxDocumentNodes), MaxDocumentBytes),
		padYAML(repeat("a", MaxDocumentNodes), MaxDocumentBytes),
	} {
		_, err := Parse(data, "doc")
		var be *BudgetError
		if !errors.As(err, &be) || be.Source != "doc" {
			t.Fatalf("Parse = %v, want a *BudgetError", err)
		}
	}
	env := []byte(`{"meta":{},"document":{"version":1,"targets":[{"services":[` + strings.Join(repeat("{}", MaxDocumentMappings), ",") + `]}]}}`)
	env = append(env[:len(env)-1], []byte(`,"p":"`+strings.Repeat("p", MaxDocumentBytes-len(env)-8)+`"}`)...)
	_, _, err := decodeEnvelope(storeObjectForTest(env))
	var be *BudgetError
	if !errors.As(err, &be) || be.Limit != "mappings" {
		t.Fatalf("decodeEnvelope = %v, want the mappings limit", err)
	}
}

// TestYAMLAliasesCountAsExpanded: an alias costs its anchor's tree each
// time it is used, so a few lines of aliases cannot pass the node limit.
func TestYAMLAliasesCountAsExpanded(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 8; i++ {
		b.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [" + strings.TrimSuffix(strings.Repeat("*a"+string(rune('0'+i-1))+", ", 10), ", ") + "]\n")
	}
	_, err := Parse([]byte(b.String()), "laughs")
	var be *BudgetError
	if !errors.As(err, &be) || be.Limit != "nodes" || be.Line == 0 {
		t.Fatalf("Parse = %v, want the nodes limit at a line", err)
	}
	// A few aliases (a shared args list) are fine.
	ok := "version: 1\ntargets:\n- name: h\n  os: linux\n  services:\n  - {name: a, unit: a.service, program: /bin/a, args: &args [serve, -v]}\n  - {name: b, unit: b.service, program: /bin/b, args: *args}\n"
	if _, err := Parse([]byte(ok), "ok"); err != nil {
		t.Fatal(err)
	}
}

// TestBudgetIsNotFooledByQuotesAndComments: brackets inside quotes,
// comments and block scalars are text, and a quote inside a plain scalar
// does not hide what follows it.
func TestBudgetIsNotFooledByQuotesAndComments(t *testing.T) {
	past := strings.Join(repeat("a", 9000), ",") // over the small document's floor
	for _, doc := range []string{
		"description: it's\nx: [" + past + "]\n# '\n",
		"a: \"x\\\"\"\nx: [" + past + "]\n",
		"a: 'it''s'\nx: [" + past + "]\n",
		"a: b#c'\nx: [" + past + "]\n",
	} {
		if _, err := checkYAMLBudget([]byte(doc), "t"); err == nil {
			t.Errorf("not refused:\n%.80s", doc)
		}
	}
	for _, doc := range []string{
		"x: '[" + past + "]'\n",
		"x: \"[" + past + "]\"\n",
		"# [" + past + "]\nx: 1\n",
		"x: |\n  [" + past + "]\n  more\ny: 1\n",
	} {
		if _, err := checkYAMLBudget([]byte(doc), "t"); err != nil {
			t.Errorf("refused: %v\n%.80s", err, doc)
		}
	}
}

func storeObjectForTest(value []byte) store.Object {
	return store.Object{Key: store.RegistryKey, Value: value, Revision: 1}
}
