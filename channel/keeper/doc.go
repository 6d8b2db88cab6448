// Package keeper owns the per-user connection keeper: `stado host keeper`,
// a process that keeps SSH connections to hosts open between stado
// commands, as OpenSSH's ControlPersist does, and the Client through which
// a command's calls ride those connections.
//
// The keeper (Serve) listens on a unix socket in a directory of its user's
// alone (0700, the socket 0600), serves only its own uid on the kernel's
// word (SO_PEERCRED on linux, LOCAL_PEERCRED on darwin), is the socket's
// only server (a sidecar lock), keeps one connection per endpoint and
// identity, checks a kept connection's host key against known_hosts before
// every reuse as a new connection would, runs channel calls in a kept
// remote session where the host serves them, and exits after an idle
// period. The Client holds the keeper to the same rules before it sends a
// byte: the socket, its directory and that directory's parent must be its
// own uid's and closed to others, and the listener must run as its uid on
// the kernel's word; otherwise it dials directly (ErrUntrusted) and logs
// why once. Its wire (length-prefixed JSON frames, one call per connection)
// is this package's alone: the SSH client's Pool sees only the sshclient.Transport
// the Client implements, and falls back to its own connection on
// sshclient.ErrNotCarried (ErrUnavailable matches it).
//
// Whether a command starts a keeper is its caller's decision: Client.Start
// is injected (stado's own process starts its executable's `host keeper`
// with StartProcess; tests start a keeper in their own process, or none).
//
// keeper imports channel/sshclient (the Dialer and Endpoint a call is
// dialed by, the host key re-check, remote sessions, the Transport it
// implements and the ends of a command, so a call through the keeper reads
// exactly as a direct one), channel (the RemoteError and stages a call
// fails with, Quote, the session verb) and registry (the Target a call
// names). It is imported only by cli, which wires it into the pool and
// runs `stado host keeper`; neither channel nor channel/sshclient may
// import it, and the read half has no business with it.
package keeper
