package catalog

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/wisent/stado/registry"
)

// checker walks a yaml.Node tree (JSON parses as YAML too) and collects
// every violation with its exact field path. The catalog is validated on
// the node tree rather than on decoded structs so that unknown fields,
// wrong types and duplicate keys are all reported, each with its path and
// line, in one pass.
type checker struct {
	out []registry.Violation
}

func (c *checker) add(path string, n *yaml.Node, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if n != nil && n.Line > 0 {
		msg += fmt.Sprintf(" (line %d)", n.Line)
	}
	c.out = append(c.out, registry.Violation{Path: path, Message: msg})
}

func join(base, field string) string {
	if base == "" {
		return field
	}
	return base + "." + field
}

func index(base string, i int) string { return fmt.Sprintf("%s[%d]", base, i) }

// keyPath renders a map key as a path element: plain keys as .key, others
// quoted.
var plainKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func keyPath(base, key string) string {
	if plainKey.MatchString(key) {
		return join(base, key)
	}
	return base + "[" + strconv.Quote(key) + "]"
}

func kindWord(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!str":
			return "a string"
		case "!!int":
			return "a number"
		case "!!float":
			return "a number"
		case "!!bool":
			return "a boolean"
		case "!!null":
			return "null"
		}
		return "a scalar"
	}
	return "nothing"
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

// mapping checks that n is a mapping with only the allowed keys, no key
// twice, and returns its values by key. A non-mapping is reported and nil
// returned.
func (c *checker) mapping(n *yaml.Node, path string, allowed ...string) map[string]*yaml.Node {
	if n.Kind != yaml.MappingNode {
		c.add(orRoot(path), n, "must be a mapping, got %s", kindWord(n))
		return nil
	}
	out := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			c.add(orRoot(path), k, "field names must be strings")
			continue
		}
		key := k.Value
		if _, dup := out[key]; dup {
			c.add(keyPath(path, key), k, "given twice")
			continue
		}
		if allowed != nil && !contains(allowed, key) {
			c.add(keyPath(path, key), k, "unknown field; allowed: %s", strings.Join(allowed, ", "))
			continue
		}
		out[key] = v
	}
	return out
}

// entries returns a mapping's key/value pairs in document order (for maps
// whose keys are data: step names, env names).
func (c *checker) entries(n *yaml.Node, path string) (keys []*yaml.Node, vals []*yaml.Node) {
	if n.Kind != yaml.MappingNode {
		c.add(orRoot(path), n, "must be a mapping, got %s", kindWord(n))
		return nil, nil
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			c.add(orRoot(path), k, "keys must be strings")
			continue
		}
		if seen[k.Value] {
			c.add(keyPath(path, k.Value), k, "given twice")
			continue
		}
		seen[k.Value] = true
		keys = append(keys, k)
		vals = append(vals, v)
	}
	return keys, vals
}

func orRoot(path string) string {
	if path == "" {
		return "(document)"
	}
	return path
}

// str returns n's string value; anything but a string scalar is reported.
func (c *checker) str(n *yaml.Node, path string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		c.add(path, n, "must be a string, got %s", kindWord(n))
		return "", false
	}
	return n.Value, true
}

// integer returns n's integer value; anything but an integer is reported.
func (c *checker) integer(n *yaml.Node, path string) (int, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		c.add(path, n, "must be an integer, got %s", kindWord(n))
		return 0, false
	}
	v, err := strconv.ParseInt(n.Value, 0, 64)
	if err != nil || v != int64(int(v)) {
		c.add(path, n, "integer out of range: %s", n.Value)
		return 0, false
	}
	return int(v), true
}

// list returns the items of a sequence; anything else is reported.
func (c *checker) list(n *yaml.Node, path string) ([]*yaml.Node, bool) {
	if n.Kind != yaml.SequenceNode {
		c.add(path, n, "must be a list, got %s", kindWord(n))
		return nil, false
	}
	return n.Content, true
}

// strings returns a list of strings, reporting each item that is not one.
func (c *checker) strList(n *yaml.Node, path string) ([]string, bool) {
	items, ok := c.list(n, path)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(items))
	good := true
	for i, it := range items {
		s, ok := c.str(it, index(path, i))
		good = good && ok
		out = append(out, s)
	}
	return out, good
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// document parses data as YAML (JSON is YAML) and returns its root
// mapping node, or a violation.
func parseNode(data []byte, c *checker) *yaml.Node {
	// A site catalog is written by whoever can write the store: the same
	// size limit and parse budget as a registry document, before yaml.v3
	// builds its tree.
	if err := registry.CheckParseBudget(data, ""); err != nil {
		c.out = append(c.out, registry.Violation{Path: "(document)", Message: err.Error()})
		return nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		c.out = append(c.out, registry.Violation{Path: "(document)", Message: "not YAML or JSON: " + msg})
		return nil
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		c.out = append(c.out, registry.Violation{Path: "(document)", Message: "empty document"})
		return nil
	}
	root := doc.Content[0]
	if hasAlias(root) {
		c.add("(document)", root, "aliases and anchors are not allowed")
		return nil
	}
	return root
}

func hasAlias(n *yaml.Node) bool {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		return true
	}
	for _, ch := range n.Content {
		if hasAlias(ch) {
			return true
		}
	}
	return false
}
