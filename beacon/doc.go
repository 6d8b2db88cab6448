// Package beacon owns the beacon: the document each host's `stado host run`
// publishes about what really runs there, the pass runner that composes and
// publishes it, and the read-side join of declarations with beacons that
// `service list`, `service status`, `host health` and `registry doctor` use.
//
// beacon is the read half. It imports registry, catalog and units, and must
// never import channel (SSH) or repair: the read half answers while a host
// is wedged because it cannot open a connection at all. Repair work reaches
// a pass only through the Contributor interface, wired by cli.
package beacon
