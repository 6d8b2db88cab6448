package store

import (
	"fmt"
	"strings"
)

// Migrated is what `store migrate` reports: the stores (named with their
// credentials redacted) and the Migration between them.
type Migrated struct {
	From string `json:"from"`
	To   string `json:"to"`
	Migration
}

// Lines are the text form: what was copied by part, replaced, and left.
func (m Migrated) Lines() []string {
	c := m.Copied
	out := []string{
		fmt.Sprintf("migrated %s -> %s", m.From, m.To),
		fmt.Sprintf("  registry: %d document (revision %d -> %d), %d history entries, %d other keys",
			c.Registry, m.RegistryRevision.From, m.RegistryRevision.To, c.History, c.RegistryOther),
		fmt.Sprintf("  catalog: %d, releases: %d, autonomy: %d", c.Catalog, c.Releases, c.Autonomy),
	}
	if m.Replaced > 0 {
		out = append(out, fmt.Sprintf("  replaced %d keys the target held (--force)", m.Replaced))
	}
	return append(out, "  not copied: "+strings.Join(m.NotCopied, ", "))
}
