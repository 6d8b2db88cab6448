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
// an SSH executor wired by cli.
//
// repair imports beacon, catalog, units and registry. It must not import
// cli, and it does not import channel: an SSH executor is handed in.
package repair
