// Package repair owns what a host does when a service stops answering: the
// answering probes asked on every beacon pass and their episodes, the repair
// steps of the repair catalog, the restart, the alerts, and the recovery
// register (~/.stado/service-recoveries.jsonl).
//
// The pass runner of package beacon never calls repair by name: an
// *Answerer is a beacon.Contributor that `stado host run` hands to it.
// Steps and restarts reach a host only through the Executor interface, so
// the beacon pass, `stado repair --apply` and the peer recovery share one
// code path (Recover, RunSteps) with different executors: Local here, and
// Remote over the host channel. HostProcess builds the answering and peer
// contributors of one host process from its store; StepPlan is what
// `stado repair` shows and, applied, runs.
//
// repair imports beacon, catalog, channel (for Remote), resolver, units and
// registry. It must not import cli.
package repair
