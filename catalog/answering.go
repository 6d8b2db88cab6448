package catalog

import (
	"bytes"
	"encoding/json"
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/wisent/stado/registry"
)

// Answering is the question a product declares on its own API: one request
// (method, path, optional JSON body) that the host process sends to the
// service's listen port on every beacon pass, and the repair steps to run
// before the restart when it stands unanswered.
type Answering struct {
	// Method is the HTTP method, in capitals ("GET", "POST").
	Method string `json:"method" yaml:"method"`
	// Path is the request target, starting with "/"; it may carry a query.
	Path string `json:"path" yaml:"path"`
	// Body is the JSON body to send, compacted; nil sends none.
	Body json.RawMessage `json:"body,omitempty" yaml:"-"`
	// Repair names repair-catalog steps run in order before the restart;
	// empty means only the restart is declared.
	Repair []string `json:"repair" yaml:"repair"`
}

// answeringFields are the only fields an answering declaration may carry.
var answeringFields = []string{"method", "path", "body", "repair"}

// ValidateAnswering checks one answering declaration given as YAML or JSON
// and returns every violation (nil when it is valid), with paths relative
// to the declaration ("method", "repair[1]"). The rules are exactly these:
// method is non-empty and in capitals (A-Z only); path starts with "/";
// repair, when present, is a list of non-empty step names (omitted, null or
// empty is valid: only the restart is declared); no field but method, path,
// body and repair. Whether the named steps exist is a catalog rule, checked
// when the catalog is built, not here.
func ValidateAnswering(raw []byte) []registry.Violation {
	c := &checker{}
	n := parseNode(raw, c)
	if n == nil {
		return c.out
	}
	c.answering(n, "")
	return c.out
}

func isCapitals(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < 'A' || r > 'Z' {
			return false
		}
	}
	return true
}

// answering validates an answering node at path and returns the decoded
// declaration (nil when it is not valid).
func (c *checker) answering(n *yaml.Node, path string) *Answering {
	before := len(c.out)
	f := c.mapping(n, path, answeringFields...)
	if f == nil {
		return nil
	}
	a := &Answering{Repair: []string{}}
	if m, ok := f["method"]; !ok {
		c.add(join(path, "method"), n, "missing; must be an HTTP method in capitals")
	} else if s, ok := c.str(m, join(path, "method")); ok {
		if !isCapitals(s) {
			c.add(join(path, "method"), m, "must be an HTTP method in capitals (A-Z only), got %q", s)
		}
		a.Method = s
	}
	if p, ok := f["path"]; !ok {
		c.add(join(path, "path"), n, "missing; must start with /")
	} else if s, ok := c.str(p, join(path, "path")); ok {
		if len(s) == 0 || s[0] != '/' {
			c.add(join(path, "path"), p, "must start with /, got %q", s)
		}
		a.Path = s
	}
	if b, ok := f["body"]; ok && !isNull(b) {
		a.Body = c.jsonBody(b, join(path, "body"))
	}
	if r, ok := f["repair"]; ok && !isNull(r) {
		rp := join(path, "repair")
		if items, ok := c.list(r, rp); !ok {
			// reported: the repair steps must be a list of names
		} else {
			for i, it := range items {
				ip := index(rp, i)
				if it.Kind != yaml.ScalarNode || it.Tag != "!!str" {
					c.add(ip, it, "must be a non-empty step name, got %s", kindWord(it))
					continue
				}
				if it.Value == "" {
					c.add(ip, it, "must be a non-empty step name")
					continue
				}
				a.Repair = append(a.Repair, it.Value)
			}
		}
	}
	if len(c.out) > before {
		return nil
	}
	return a
}

// jsonBody turns a YAML or JSON value into compact JSON.
func (c *checker) jsonBody(n *yaml.Node, path string) json.RawMessage {
	var v any
	if err := n.Decode(&v); err != nil {
		c.add(path, n, "cannot be read: %v", err)
		return nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		c.add(path, n, "must be representable as JSON (mapping keys must be strings)")
		return nil
	}
	return json.RawMessage(data)
}

// SameQuestion reports whether a and b ask the same question: method, path
// and body. A change of any of them retires an in-flight question. Two nil
// declarations ask the same (no) question.
func (a *Answering) SameQuestion(b *Answering) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Method == b.Method && a.Path == b.Path && sameJSON(a.Body, b.Body)
}

// SameRepair reports whether a and b declare the same repair steps in the
// same order (nil and empty are the same).
func (a *Answering) SameRepair(b *Answering) bool {
	var ra, rb []string
	if a != nil {
		ra = a.Repair
	}
	if b != nil {
		rb = b.Repair
	}
	return slices.Equal(ra, rb)
}

func sameJSON(x, y json.RawMessage) bool {
	if len(x) == 0 || len(y) == 0 {
		return len(x) == len(y)
	}
	var bx, by bytes.Buffer
	if json.Compact(&bx, x) != nil || json.Compact(&by, y) != nil {
		return bytes.Equal(x, y)
	}
	return bytes.Equal(bx.Bytes(), by.Bytes())
}
