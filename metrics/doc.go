// Package metrics owns the Prometheus metrics of `stado host run`: the
// families, their names and label values, the text exposition format
// they are served in (version 0.0.4, written here with the standard
// library: no Prometheus client library is linked, for the host
// process's memory), a fixed set of Go runtime and process readings, and
// the instrumenting decorator of the store the host process uses. The
// host API serves them at GET /metrics (beacon.Runner.MetricsHandler).
//
// Where the numbers come from: the pass runner tells Host.PassEnded of
// every pass (beacon.PassObserver), and everything but store latency is
// read from that pass's report and the beacon it composed — the answering
// blocks and recoveries the repair contributors put there, the peer
// recoveries, the release block read from the host's state file. Nothing
// else in the tree calls a counter: what a metric says is what the beacon
// said. The store's latency is the one measure the beacon does not hold;
// Instrument wraps the store.Store once, where package hostprocess
// assembles the host process, so every reader and writer of the host
// process (runner, contributors, host API) is timed.
//
// It is a package of its own, not a file of beacon, so that beacon (the
// read half every read command links) carries no metrics code, and so
// the decorator can time the store for the whole host process, not only
// the runner.
//
// metrics imports, and only for this:
//   - beacon: the pass report, the beacon and its states;
//   - store: the Store it decorates and the sentinels that are answers;
//   - register: the recovery records the answering and peer blocks carry;
//   - release: the activation outcomes of the host's release state.
//
// It must not import channel, fleet, repair, autonomy, desktop or cli:
// it observes a pass, it never acts.
package metrics
