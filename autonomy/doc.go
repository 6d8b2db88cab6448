// Package autonomy owns the autonomy cycle (stado optimize run): it joins
// the latest host beacons with a sweep of one call per host (reachability
// alone for a host whose fresh beacon says each unit's state and drift, a
// full verify otherwise), plans every declared
// service (restore, reinstall, start, restart or nothing, or a recorded
// refusal) and every declared release version a host does not run
// (converge), and in enforce mode acts on the plan through the write half
// (package fleet) under a blast-radius cap, one enforcer per store at a
// time by a lease, then re-verifies every unit it touched. Every cycle is
// recorded in the store under autonomy/ (a bounded history), and refusals
// and failed actions are alerted on the targets' webhook channels; a
// target's command channels run only in its own host process, never in a
// cycle, which records them as not run.
//
// The planner (Plan) is a pure function over declarations, beacon rows and
// verify results: it opens nothing and changes nothing, so report mode and
// the benchmarks run it alone.
//
// autonomy imports fleet (the write half, its only road to a host: hosts come
// through a fleet.Connector), release/rollout (the release rows: where each
// host's products stand against the declared versions, read from the
// beacons, and the activation of a converge row over the same connector),
// beacon (the read half's join), alert (the alerts of failed and refused
// actions), register (the record an alert document carries), catalog,
// units, refusal, registry and spread (the plan made on every processor).
// It must not
// import channel, repair or cli (the module's architecture test holds it to that);
// nothing but cli imports it.
package autonomy
