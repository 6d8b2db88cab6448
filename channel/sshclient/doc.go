// Package sshclient is the SSH end of the host channel: Client implements
// channel.Host by running `stado host channel VERB ...` on a target, one
// remote execution per call, over the connection a Pool keeps to that target
// for the life of a command. Pool.Connect is the channel.Connector the write
// half is handed. The Dialer behind a Pool reads ~/.ssh/config Host entries,
// checks host keys strictly against known_hosts (HostKeyError names an
// unknown, changed or revoked key), authenticates with ssh-agent and identity
// files, and sends keepalives; a Transport (the per-user keeper) may carry a
// Pool's calls over connections kept between commands, and StartSession
// opens a remote session that serves many calls in one run of stado.
//
// sshclient imports channel (the Host interface it implements, the verb
// grammar and documents a call is written and read with, RemoteError and its
// stages), registry (the Target a call reaches), units and register (the
// typed results some verbs decode into), refusal (the codes of host key and
// protocol refusals) and safefile (the locked, atomic rewrite of known_hosts
// when a new host key is accepted), and golang.org/x/crypto/ssh with its
// agent and knownhosts packages — which no other stado package imports but
// the keeper and channeltest's in-process test server.
//
// Only packages that build connections import it: cli (each command's
// connector from its ssh flags, and `stado host run`'s peers), channel/keeper
// (which holds connections) and tests. channel never imports it, and neither
// do fleet, repair, autonomy, desktop, beacon or resolver: they act through a
// channel.Connector or channel.Host they are handed, so the read half and
// the write half's decisions never link an SSH library.
//
// The release verbs send and decode the types of package release.
package sshclient
