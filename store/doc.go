// Package store owns where stado keeps its state: the Store interface
// (get with revision, compare-and-swap, list by prefix), the layout of its
// keys (docs/store.md), the file backend with its per-key locks and the
// fence on each data file, purging keys that are never written again,
// visiting a prefix without holding it in memory, the registry's revision
// envelope (Meta) and Migrate, which copies one store into another. The
// etcd backend is store/etcdstore; store/storetest is the conformance
// suite every backend passes.
//
// It knows nothing of what a registry document holds: registry reads and
// writes documents through it. It imports two stado leaves only —
// safefile (atomic writes and the sidecar lock files of the file backend)
// and refusal (Migrate refuses a target that is not empty with a code) —
// so every other package, registry included, may use it.
package store
