package registry

import (
	"bytes"
	"fmt"

	"gopkg.in/yaml.v3"
)

// The parse budget (docs/limits.md). A document inside MaxDocumentBytes
// can still hold millions of tiny values: a YAML flow sequence of 16 M
// one-letter scalars costs yaml.v3 about 280 bytes of memory each, and an
// empty mapping ({}, 3 bytes) becomes an 816-byte Service. Before any
// decoder builds a tree, one pass over the bytes (checkBudget) counts
// nodes, mappings and nesting, and the document is refused at the first
// byte that exceeds a limit. The pass is an upper bound for YAML (it may
// count a node twice, never miss one) and exact for JSON.
const (
	// MaxDocumentDepth bounds how deeply collections nest. The deepest
	// field of the format (targets[].services[].systemd_keys[].key) is 7
	// levels down.
	MaxDocumentDepth = 16
	// MaxDocumentNodes bounds the nodes of a document: every scalar, key,
	// sequence and mapping. 10,000 targets of 20 services (the largest
	// fleet the other limits admit) is about 3.1 million.
	MaxDocumentNodes = 4_000_000
	// MaxDocumentMappings bounds the mappings (objects) of a document,
	// each of which may become a struct of up to 816 bytes (a service).
	// 10,000 targets of 20 services is about 230,000.
	MaxDocumentMappings = 300_000
	// BudgetBytesPerNode and BudgetBytesPerMapping make the two counts
	// proportional to the size of the text: a document may hold one node
	// per BudgetBytesPerNode bytes and one mapping per
	// BudgetBytesPerMapping bytes, beyond BudgetFloor of each, so that a
	// small document cannot be made of nothing but empty values. Fleets as
	// written spend 9 bytes (stored JSON) to 14 (YAML) per node and 60 to
	// 130 per mapping.
	BudgetBytesPerNode    = 4
	BudgetBytesPerMapping = 32
	BudgetFloor           = 4096
)

// BudgetError is a document refused by the parse budget before it was
// decoded. It unwraps to ErrInvalid.
type BudgetError struct {
	Source string
	Limit  string // "nodes", "mappings" or "depth"
	Max    int    // the limit for this document
	Offset int    // byte offset (0-based) where the limit was passed
	Line   int    // 1-based line of Offset
}

func (e *BudgetError) Error() string {
	prefix := ""
	if e.Source != "" {
		prefix = e.Source + ": "
	}
	what := map[string]string{
		"nodes":    "more than %d nodes (values, keys and collections)",
		"mappings": "more than %d mappings",
		"depth":    "collections nested more than %d deep",
	}[e.Limit]
	return fmt.Sprintf("%sline %d (byte %d): document exceeds its parse budget: "+what+" (%s limit, docs/limits.md)",
		prefix, e.Line, e.Offset, e.Max, e.Limit)
}

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *BudgetError) Unwrap() error { return ErrInvalid }

// budgetFor returns the node and mapping limits of a document of n bytes.
func budgetFor(n int) (nodes, mappings int) {
	nodes = min(MaxDocumentNodes, BudgetFloor+n/BudgetBytesPerNode)
	mappings = min(MaxDocumentMappings, BudgetFloor+n/BudgetBytesPerMapping)
	return nodes, mappings
}

// budget counts as a scan goes and reports the first limit passed.
type budget struct {
	data              []byte
	source            string
	maxNodes, maxMaps int
	nodes, maps       int
	aliases           int // YAML alias uses (*name) seen
	err               *BudgetError
}

func newBudget(data []byte, source string) *budget {
	b := &budget{data: data, source: source}
	b.maxNodes, b.maxMaps = budgetFor(len(data))
	return b
}

func (b *budget) fail(limit string, max, at int) {
	if b.err == nil {
		b.err = &BudgetError{Source: b.source, Limit: limit, Max: max, Offset: at, Line: lineAt(b.data, int64(at))}
	}
}

func (b *budget) node(at int) {
	b.nodes++
	if b.nodes > b.maxNodes {
		b.fail("nodes", b.maxNodes, at)
	}
}

func (b *budget) mapping(at int) {
	b.maps++
	if b.maps > b.maxMaps {
		b.fail("mappings", b.maxMaps, at)
	}
}

func (b *budget) nest(depth, at int) {
	if depth > MaxDocumentDepth {
		b.fail("depth", MaxDocumentDepth, at)
	}
}

// checkJSONBudget scans JSON text: every value and key is a node, every
// object a mapping, every object or array a level. Syntax is left to the
// decoder; the scan only follows strings and brackets.
func checkJSONBudget(data []byte, source string) error {
	return scanJSON(newBudget(data, source)).errOrNil()
}

func scanJSON(b *budget) *budget {
	data := b.data
	depth := 0
	for i := 0; i < len(data) && b.err == nil; i++ {
		switch c := data[i]; c {
		case ' ', '\t', '\n', '\r', ':', ',':
		case '"':
			b.node(i)
			j := stringEnd(data, i+1)
			if j < 0 {
				return b // unterminated: the decoder refuses it
			}
			i = j
		case '{', '[':
			b.node(i)
			if c == '{' {
				b.mapping(i)
			}
			depth++
			b.nest(depth, i)
		case '}', ']':
			depth--
		default:
			b.node(i)
			for i+1 < len(data) && !isDelimiter(data[i+1]) && data[i+1] != '"' && data[i+1] != '[' && data[i+1] != '{' {
				i++
			}
		}
	}
	return b
}

// checkYAMLBudget scans YAML text without parsing it and returns how many
// alias uses (*name) it saw. It counts at least one node wherever yaml.v3
// can begin one: a scalar, a "- " entry, a ": " value, a flow bracket or
// ",". A block mapping is counted at the first key of its indentation
// level or after "- ", a flow mapping at "{". Depth is the indentation
// levels open below the first, plus each "- " and the first key on the
// same line, plus open flow brackets: exact for flow collections, within
// a level or two of yaml.v3's nesting for block ones.
// Comments, quoted scalars and block scalars (| and >) are followed so
// that nothing inside them counts.
func checkYAMLBudget(data []byte, source string) (int, error) {
	b := scanYAML(newBudget(data, source))
	return b.aliases, b.errOrNil()
}

func scanYAML(b *budget) *budget {
	data := b.data
	var (
		indents     []int // open block indentation levels
		flow        int   // open flow brackets
		lineDepth   int   // block depth of the current line
		lineIndent  int
		lineStart   int    // offset of the current line
		flowKinds   []byte // the open flow brackets, innermost last
		mapped      []bool // per open level: a mapping was counted there
		keyed       bool   // a ':' indicator was counted on this line
		dashed      bool   // a "- " was seen on this line before its first key
		nodeStart   = true
		atLineStart = true
		blockParent = -2 // inside a block scalar: the indent of its parent line
	)
	space := func(i int) bool {
		return i >= len(data) || data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r'
	}
	flowIndicator := func(i int) bool {
		return i < len(data) && (data[i] == ',' || data[i] == '[' || data[i] == ']' || data[i] == '{' || data[i] == '}')
	}
	toEOL := func(i int) int {
		for i < len(data) && data[i] != '\n' && data[i] != '\r' { // YAML breaks lines at either
			i++
		}
		return i
	}
	i := 0
	for i < len(data) && b.err == nil {
		if atLineStart {
			j := i
			for j < len(data) && data[j] == ' ' {
				j++
			}
			indent := j - i
			if j == len(data) || data[j] == '\n' || data[j] == '\r' || (data[j] == '#' && flow == 0 && blockParent < -1) {
				i = toEOL(j) + 1 // blank or comment-only line
				continue
			}
			if blockParent >= -1 {
				if indent > blockParent {
					i = toEOL(j) + 1 // content of a block scalar
					continue
				}
				blockParent = -2
			}
			atLineStart, lineStart, i = false, i, j
			if flow == 0 {
				for len(indents) > 0 && indents[len(indents)-1] > indent {
					indents, mapped = indents[:len(indents)-1], mapped[:len(mapped)-1]
				}
				if len(indents) == 0 || indents[len(indents)-1] != indent {
					indents, mapped = append(indents, indent), append(mapped, false)
				}
				lineIndent, lineDepth, keyed, dashed = indent, len(indents)-1, false, false
				b.nest(lineDepth, i)
				nodeStart = true
			}
			continue
		}
		c := data[i]
		switch {
		case c == '\n':
			atLineStart = true
			i++
			continue
		case c == '\r':
			atLineStart = i+1 >= len(data) || data[i+1] != '\n' // a lone CR breaks the line
			i++
			continue
		case c == ' ' || c == '\t':
			i++
			continue
		case c == '#' && (i == 0 || space(i-1)):
			i = toEOL(i)
			continue
		}
		if nodeStart {
			switch {
			case c == '"':
				b.node(i)
				j := yamlDoubleQuoteEnd(data, i+1)
				if j < 0 {
					return b // unterminated: yaml.v3 refuses it
				}
				i, nodeStart = j+1, false
				continue
			case c == '\'':
				b.node(i)
				j := yamlSingleQuoteEnd(data, i+1)
				if j < 0 {
					return b
				}
				i, nodeStart = j+1, false
				continue
			case c == '&': // an anchor: the node follows, or is empty
				b.node(i)
				i = nameEnd(data, i+1) // anything after the name counts as what it is
				continue
			case c == '!': // a tag: the node follows, or is empty
				b.node(i)
				for i < len(data) && !space(i) && !(flow > 0 && flowIndicator(i)) {
					i++
				}
				continue
			case c == '*':
				b.aliases++
				b.node(i)
				i = nameEnd(data, i+1)
				nodeStart = false
				continue
			case (c == '|' || c == '>') && flow == 0:
				b.node(i)
				blockParent = lineIndent
				i = toEOL(i)
				continue
			case (c == '-' || c == '?') && flow == 0 && space(i+1):
				b.node(i)
				if c == '?' {
					b.node(i) // "? key" opens a mapping entry: the mapping,
					b.node(i) // a key and a value that may both be empty
					b.mapping(i)
				}
				i++
				if c == '-' && !keyed {
					dashed = true
					lineDepth++
					b.nest(lineDepth, i)
					// What follows "- " on the line sits at its own
					// indentation level: the next lines of that node are
					// written at this column.
					j := i
					for j < len(data) && data[j] == ' ' {
						j++
					}
					if col := j - lineStart; j < len(data) && !space(j) && data[j] != '#' && indents[len(indents)-1] < col {
						indents, mapped = append(indents, col), append(mapped, false)
					} else {
						b.node(i) // the entry may be empty (null): count it here
					}
				}
				continue
			}
		}
		if c == ':' && (space(i+1) || (flow > 0 && flowIndicator(i+1))) {
			b.node(i)
			if flow > 0 && flowKinds[flow-1] == '[' {
				b.node(i)
				b.mapping(i) // [a: 1] holds a one-pair mapping
			}
			if flow == 0 && !keyed {
				keyed = true
				if top := len(mapped) - 1; !mapped[top] || dashed {
					mapped[top] = true
					b.node(i) // the mapping itself
					b.mapping(i)
				}
				lineDepth++
				b.nest(lineDepth, i)
			}
			i++
			nodeStart = true
			continue
		}
		if flow > 0 || nodeStart {
			switch c {
			case '[', '{':
				b.node(i)
				if c == '{' {
					b.node(i) // the first entry's value, which may be left out
					b.mapping(i)
				}
				flow++
				flowKinds = append(flowKinds, c)
				b.nest(lineDepth+flow, i)
				i++
				nodeStart = true
				continue
			}
		}
		if flow > 0 {
			switch c {
			case ']', '}':
				flow--
				flowKinds = flowKinds[:flow]
				i++
				nodeStart = false
				continue
			case ',':
				if flowKinds[flow-1] == '{' {
					b.node(i) // the value of a key written without one
				}
				i++
				nodeStart = true
				continue
			}
		}
		if nodeStart {
			b.node(i) // a plain scalar begins
			nodeStart = false
		}
		i++
	}
	return b
}

// nameEnd returns the end of an anchor, alias or tag name starting at i:
// yaml.v3 reads letters, digits, '_' and '-'; stopping
// early only makes the scan count more.
func nameEnd(data []byte, i int) int {
	for i < len(data) {
		c := data[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			break
		}
		i++
	}
	return i
}

func (b *budget) errOrNil() error {
	if b.err != nil {
		return b.err
	}
	return nil
}

// yamlDoubleQuoteEnd returns the index of the '"' closing a double-quoted
// scalar whose content starts at from ('\' escapes the next byte), or -1.
func yamlDoubleQuoteEnd(b []byte, from int) int {
	for i := from; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// yamlSingleQuoteEnd returns the index of the '\” closing a single-quoted
// scalar whose content starts at from ("”" is a quote), or -1.
func yamlSingleQuoteEnd(b []byte, from int) int {
	for i := from; i < len(b); i++ {
		if b[i] == '\'' {
			if i+1 < len(b) && b[i+1] == '\'' {
				i++
				continue
			}
			return i
		}
	}
	return -1
}

// checkYAMLAliases counts the nodes of root with every alias expanded (an
// alias costs what its anchor's tree costs each time it is decoded) and
// refuses the document at the alias that passes the node limit. It runs
// only on documents whose scan saw an alias, so root is already bounded.
func checkYAMLAliases(root *yaml.Node, data []byte, source string) error {
	maxNodes, _ := budgetFor(len(data))
	memo := map[*yaml.Node]int{}
	var size func(n *yaml.Node, depth int) int
	size = func(n *yaml.Node, depth int) int {
		if depth > 2*MaxDocumentDepth+8 { // cannot happen after the scan; a cycle guard
			return maxNodes + 1
		}
		if v, ok := memo[n]; ok {
			return v
		}
		total := 1
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			total = size(n.Alias, depth+1)
		}
		for _, c := range n.Content {
			total += size(c, depth+1)
			if total > maxNodes {
				break
			}
		}
		memo[n] = total
		return total
	}
	var total int
	var walk func(n *yaml.Node, depth int) *yaml.Node
	walk = func(n *yaml.Node, depth int) *yaml.Node {
		if n.Kind == yaml.AliasNode {
			total += size(n, depth)
		} else {
			total++
		}
		if total > maxNodes {
			return n
		}
		for _, c := range n.Content {
			if at := walk(c, depth+1); at != nil {
				return at
			}
		}
		return nil
	}
	if at := walk(root, 0); at != nil {
		return &BudgetError{Source: source, Limit: "nodes", Max: maxNodes, Offset: offsetOfLine(data, at.Line), Line: at.Line}
	}
	return nil
}

// offsetOfLine returns the byte offset where 1-based line starts.
func offsetOfLine(data []byte, line int) int {
	off := 0
	for l := 1; l < line && off < len(data); l++ {
		k := bytes.IndexByte(data[off:], '\n')
		if k < 0 {
			return len(data)
		}
		off += k + 1
	}
	return off
}

// CheckParseBudget refuses data, a YAML or JSON document named source,
// when it is larger than MaxDocumentBytes (a *ParseError) or past the
// parse budget (a *BudgetError), before anything decodes it. Parse runs it
// itself; other documents a store writer can write and stado parses with
// yaml.v3 (the site catalog) call it first. Both errors unwrap to
// ErrInvalid. It is safe for concurrent use and touches nothing.
func CheckParseBudget(data []byte, source string) error {
	if err := CheckDocumentSize(data, source); err != nil {
		return err
	}
	if DetectFormat(data) == FormatJSON {
		return checkJSONBudget(data, source)
	}
	aliases, err := checkYAMLBudget(data, source)
	if err != nil || aliases == 0 {
		return err
	}
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil {
		return nil // the caller's decoder reports it
	}
	return checkYAMLAliases(&root, data, source)
}
