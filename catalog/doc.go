// Package catalog owns the shipped product declarations and the repair
// catalog, both embedded data files (data/products.json and
// data/repair-catalog.json), the validation of the answering question a
// product declares, and the merge of a site catalog document kept in the
// store (store.CatalogKey) over the shipped one.
//
// A product entry is how stado knows a service it was not told about in the
// registry: its unit identity per OS, program, args, required environment,
// default port and the answering question asked of it on every beacon pass.
// The product name and either native unit identity select the same entry.
//
// catalog imports registry (the document a catalog entry answers for),
// declaration (a product's unit identity and settings in the declaration
// grammar), store (the site catalog's key), refusal (the codes of a bad
// entry) and the standard library and yaml.v3. It
// is used by both halves: the read half (beacon) and the write half (repair,
// cli), so it must never import channel, units, beacon or repair. Nothing in
// it touches a host; every function is pure apart from Load, which reads one
// key of the store.
package catalog
