// Package beacon owns the beacon: the document each host's `stado host run`
// publishes about what really runs there, the pass runner that composes and
// publishes it, and the read-side join of declarations with beacons that
// `service list`, `service status`, `host health` and `registry doctor` use,
// with the words every reader says about a row or block, and the tables
// the CLI prints of them (summary.go). It
// also serves the host process's small read-only HTTP API beside its passes
// (hostapi.go: /healthz and release objects from the store).
//
// beacon is the read half. It imports registry, catalog and units, and must
// never import channel (SSH) or repair: the read half answers while a host
// is wedged because it cannot open a connection at all. Repair work reaches
// a pass only through the Contributor interface, wired by cli.
package beacon
