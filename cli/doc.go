// Package cli builds the stado command-line application: commands, flags,
// text and --json output, and the one table that maps errors to exit codes.
// It holds no business logic: every command parses its flags into an options
// struct and calls a runX function that makes one call into the package
// that owns the decision (beacon's queries for the read commands, store's
// UnlockStale, catalog's Show, registry's LoadAt, autonomy's ReadStatus,
// repair's PlanStepIn) and prints the typed result.
//
// Every host command reaches its hosts through the one connector its ssh
// flags describe (connectorFrom): the write half through fleet, `repair
// --apply` by handing repair the target's Host, `host channel` by serving
// this machine's end (hostprocess.Machine.LocalHost). cli is where SSH
// connections are built: it imports channel/sshclient for the pool behind
// every connector (sshConnector, also the one `stado host run` hands the
// host process to reach its peers) and
// channel/keeper for the transport that keeps connections between commands;
// the packages it calls take a channel.Connector and never import the SSH
// client. cli builds no other pool, client or step runner; `stado host
// bootstrap` runs raw argv over a pool of the same constructor (hostShell),
// handed to release/bootstrap as its Shell.
//
// What else it imports, each for the commands that need it: the read half
// (beacon, catalog, registry) for reads without SSH; the write half (fleet),
// convergence (what `service converge` acts from) and autonomy for
// actions; repair for `stado repair`; hostprocess, which
// assembles the host process (`stado host run`) and this machine's end of
// the host channel from what cli parsed; desktop and resolver for their
// servers; release for the release commands (keys, publish, prune,
// declared versions); release/bootstrap for
// `stado host bootstrap`; register for the recovery rows; store and
// store/etcdstore to open the store named by --store; units for the
// host-side unit commands; printer for the output layer; refusal for the
// exit-code table; release/rollout for the release version commands (show
// and converge); completion for `stado completion` and the hidden
// `__complete` the scripts call back (its names read from the validated
// registry, never over SSH); manpage and safefile for the hidden
// `__man` that writes the manual pages make install and make package ship.
//
// cli is the top of the dependency graph; nothing imports it but cmd/stado.
package cli
