// Package registry owns the registry document (targets, their services, the
// service directory and the resolver settings), its validation with exact
// field paths, and the Store that holds it together with beacons, catalog
// extensions, autonomy outcomes and release objects.
//
// It is the bottom of the dependency graph: it imports no other stado
// package, so every other package (read half and write half alike) may use it.
package registry
