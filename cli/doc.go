// Package cli builds the stado command-line application: commands, flags,
// text and --json output, and the one table that maps errors to exit codes.
// It holds no business logic: every command parses its flags into an options
// struct and calls a runX function that uses the domain packages.
//
// cli is the top of the dependency graph; nothing imports it but cmd/stado.
package cli
