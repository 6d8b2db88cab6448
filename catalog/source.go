package catalog

// SourceRegistry is the third source of a managed unit: declared in a
// target's services[], the one source the catalog does not give.
const SourceRegistry = "registry"

// Entry returns the catalog entry nameOrUnit selects: a product by its name
// or any of its unit identities (so the product name and its native unit
// identity select the same entry, environment included), else a recovery
// list entry by its name or unit identity.
func (c *Catalog) Entry(nameOrUnit string) (*Product, bool) {
	if p, ok := c.Lookup(nameOrUnit); ok {
		return p, true
	}
	return c.RecoveryEntry(nameOrUnit)
}

// SourceOf says where a unit on a host is managed from: SourceRecovery when
// its unit identity is on the fixed recovery list (whatever else declares
// it: the host repair step restarts it, so it is never retired, removed or
// adopted), else SourceRegistry when a declaration covers it, else
// SourceProduct when a catalog product names it, else "".
func (c *Catalog) SourceOf(unit string, declared bool) string {
	if _, ok := c.RecoveryEntry(unit); ok && unit != "" {
		return SourceRecovery
	}
	if declared {
		return SourceRegistry
	}
	if _, ok := c.Lookup(unit); ok && unit != "" {
		return SourceProduct
	}
	return ""
}
