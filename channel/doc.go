// Package channel owns the protocol of the write half's one road to a host:
// the Host interface (one typed request and result per verb) and the
// Connector that hands a target's Host to the write half, the remote
// program's verb grammar (the closed set of verbs `stado host channel`
// accepts, each with validated arguments, and Serve, which refuses anything
// else having run nothing), its result, error and refusal documents, the
// capabilities a host advertises, sessions of many calls, the RemoteError a
// failed call is reported by, and the bounded parallel fan-out over hosts.
//
// channel imports registry (registry.Target, the declared service an ensure
// or a verify carries, the OS names its grammar checks against), declaration
// (the unit name, path and environment rules its grammar checks arguments
// by), units (the verdicts, install results, unit files and listeners the
// verbs' typed results are made of), register (a repair step's result and
// the rows of the recoveries verb are the register's record) and refusal
// (the one refusal type and code set, so a code survives the wire). It does
// not import an SSH library, and must never be imported by the read half
// (beacon, service list/status, registry doctor): those answer from the
// store while a host is wedged. The host-side work a verb triggers is behind
// the Host interface, which channel/local implements with the units Manager
// and the catalog; channel itself never touches the init system.
//
// The ends that carry the protocol live beside it: channel/sshclient is the
// SSH client (Client, a Host over a pooled SSH connection per target), which
// imports channel; channel/local is this machine's Host; channel/keeper keeps
// connections between commands for the SSH client. channel imports none of
// them, so a package that acts through a Connector it is handed (fleet,
// repair, autonomy, desktop) never links an SSH client. Skew between a
// client and an older host is read from the capabilities every document of
// the remote program advertises (Capability), never from a message.
//
// Neither side uses a shell: a client sends one command string of
// individually single-quoted words (Quote) and the remote end splits it back
// with a grammar that knows only plain words and single quotes (ParseCommand).
//
// The release verbs carry the request and result types of package release.
package channel
