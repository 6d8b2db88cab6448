// Package cli builds the stado command-line application: commands, flags,
// text and --json output, and the one table that maps errors to exit codes.
// It holds no business logic: every command parses its flags into an options
// struct and calls a runX function that uses the domain packages.
//
// Every host command reaches its hosts through the one connector its ssh
// flags describe (connectorFrom): the write half through fleet, `repair
// --apply` by handing repair the target's Host, `host channel` by serving
// channel/local. cli builds no pool, client or step runner of its own.
//
// cli is the top of the dependency graph; nothing imports it but cmd/stado.
package cli
