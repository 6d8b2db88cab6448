// Package registry owns the registry document (targets, their services, the
// service directory, the resolver, autonomy and alert settings), its
// parsing, and its whole-document validation with exact field paths; it
// reads and writes the document in a store through Load, Push and Update.
//
// It imports declaration (one service's declaration and its rules, which
// whole-document validation runs under each service's path), store (where
// the document and its history are kept), refusal (the not_found and
// ambiguous refusals of Find) and spread (a fleet-size stored document's
// targets decoded on every processor) and no other stado package, so every package
// above it (read half and write half alike) may use it.
package registry
