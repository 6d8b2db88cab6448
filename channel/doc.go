// Package channel owns the write half's one road to a host: the SSH client
// (strict known_hosts checking, ssh-agent and identity-file authentication,
// ~/.ssh/config Host entries, one reused connection per host, keepalives and
// a bounded parallel fan-out) and the remote program's verb grammar (the
// closed set of verbs `stado host channel` accepts, each with validated
// arguments, and Serve, which refuses anything else having run nothing).
//
// channel imports registry (registry.Target, the declared service an ensure
// or a verify carries, and the unit name, path and environment rules its
// grammar checks arguments by), units (the verdicts, install results, unit
// files and listeners the verbs' typed results are made of), register (a repair
// step's result and the rows of the recoveries verb are the register's
// record), refusal (the one refusal type and code set, so a code survives
// the wire) and safefile (the locked, atomic rewrite of known_hosts when a
// new host key is accepted). It must never be
// imported by the read half (beacon, service list/status, registry doctor):
// those answer from the store while a host is wedged, so they have no business
// linking an SSH client. The host-side work a verb triggers is behind the Host
// interface, which the caller implements with the units Manager and the
// catalog; channel itself never touches the init system.
//
// Connections kept between commands are not channel's: the per-user keeper
// lives in channel/keeper, which imports channel and reaches the Pool only
// through the Transport interface (channel never imports it). Skew between
// a client and an older host is read from the capabilities every document
// of the remote program advertises (Capability), never from a message.
//
// Neither side uses a shell: the client sends one command string of
// individually single-quoted words (Quote) and the remote end splits it back
// with a grammar that knows only plain words and single quotes (ParseCommand).
package channel
