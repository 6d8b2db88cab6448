// Package channel owns the write half's one road to a host: the SSH client
// (strict known_hosts checking, ssh-agent and identity-file authentication,
// ~/.ssh/config Host entries, one reused connection per host, keepalives and
// a bounded parallel fan-out) and the remote program's verb grammar (the
// closed set of verbs `stado host channel` accepts, each with validated
// arguments, and Serve, which refuses anything else having run nothing).
//
// channel imports registry (for registry.Target and the declaration an
// ensure carries), units (verdicts and unit files in results), register (a
// repair step's result and the register rows of the recoveries verb are the
// register's record), refusal and safefile. It must never be
// imported by the read half (beacon, service list/status, registry doctor):
// those answer from the store while a host is wedged, so they have no business
// linking an SSH client. The host-side work a verb triggers is behind the Host
// interface, which the caller implements with the units Manager and the
// catalog; channel itself never touches the init system.
//
// Neither side uses a shell: the client sends one command string of
// individually single-quoted words (Quote) and the remote end splits it back
// with a grammar that knows only plain words and single quotes (ParseCommand).
package channel
