package registry

// BudgetCounts returns the nodes and mappings the YAML scan of the parse
// budget counts in data, with no limit applied.
func BudgetCounts(data []byte) (nodes, mappings int) {
	b := newBudget(data, "")
	b.maxNodes, b.maxMaps = int(^uint(0)>>1), int(^uint(0)>>1)
	scanYAML(b)
	return b.nodes, b.maps
}
