// Package hostprocess assembles the two stado processes that act on the
// host they run on, from what the command line hands them (the home
// directory, the environment, the store URL, the clock, the version):
//
//   - the host process of `stado host run` (Process.Run): the store timed
//     for /metrics, this host's init system and its users' managers, the
//     pass runner with its contributors (repair's answering and peer
//     contributors, the service-protocol evidence), the host API, and the
//     passes themselves;
//   - this machine's end of the host channel (Machine.LocalHost), which
//     `stado host channel` serves one verb at a time and the local
//     recoveries read goes through: channel/local with the catalog of the
//     store this host names and the release directory, store and peers the
//     release verbs need.
//
// cli parses the flags, checks them, opens the store and builds the SSH
// pool to the peers; this package wires the rest and runs it. It holds no
// decision of its own: each part decides in its package.
//
// hostprocess imports, each for this:
//   - beacon: the pass runner, the unit observer, the init system, the
//     unit-file drift, the service-protocol evidence, the host API, and
//     the beacons that prove a release activation and name the peers that
//     serve chunks;
//   - repair: the answering and peer contributors (repair.HostProcess);
//   - metrics: the families of /metrics and the store decorator;
//   - channel: only the type of the Connector to the peers, which the
//     caller builds (cli, over the SSH client), so this package never
//     links channel/sshclient;
//   - channel/local: this machine's Host;
//   - release and release/hostend: the release directory and the release
//     verbs' source (the store, then the peers);
//   - catalog: the store's catalog over the shipped one;
//   - registry: this host's target name;
//   - store, store/etcdstore (a store URL as the log may show it) and
//     units (the user managers of user-scope declarations).
//
// It must not import cli (cli imports it for `stado host run`, `stado host
// channel` and `stado service recoveries` without --host), fleet, autonomy
// or desktop.
package hostprocess
