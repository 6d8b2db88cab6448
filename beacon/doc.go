// Package beacon owns the beacon: the document each host's `stado host run`
// publishes about what really runs there, the pass runner that composes and
// publishes it, and the read-side join of declarations with beacons that
// `service list`, `service status`, `host health` and `registry doctor` use,
// with the words every reader says about a row or block, and the tables
// the CLI prints of them (summary.go). The read commands' queries
// (query.go: List, Status, HealthOf, DoctorOf) decide what a name or a
// filter selects, each row's source and what is refused, and return typed
// results the CLI only prints. It
// also serves the host process's small read-only HTTP API beside its passes
// (hostapi.go: /healthz, release objects from the store, and /metrics
// when handed a handler — it never imports a metrics library: package
// metrics hears each pass through PassObserver), and tells
// systemd how the pass loop fares (notify.go: READY=1 after the first
// pass, the watchdog petted only between passes, STATUS=).
//
// The read half (read.go, validated.go) does per-row work proportional to
// the rows: one host's rows are found through an index of the targets, a
// selection (a host, or the targets declaring a service) leaves the other
// hosts' beacons undecoded, and a validated-registry cache in the user's
// cache directory spares a read command validating a registry it already
// validated (RegistryCache says why that file is trusted). Freshness
// carries a typed kind that callers switch on, never its words.
//
// beacon is the read half. It imports, and only for this:
//   - registry: the document, the store, Visit and validation;
//   - catalog: the site catalog the host API serves (hostapi.go), and
//     what a name addresses and each row's source (query.go);
//   - units: what the pass observes of the host's units (observer.go);
//   - svcproto: reading a service's protocol executable (protocol.go);
//   - spread: the fleet-wide join made on every processor (read.go);
//   - refusal: the codes the pass and the host API report;
//   - release: the host's release state file each pass carries (releases.go);
//   - safefile: the atomic write of the registry cache file.
//
// It must never import channel (SSH), fleet or repair: the read half
// answers while a host is wedged because it cannot open a connection at
// all. Repair work reaches a pass only through the Contributor interface,
// wired by package hostprocess.
package beacon
