// Package register owns the recovery register: the record of every attempt
// a host (or a peer on its behalf) made to recover a standing service, kept
// one JSON object per line in ~/.stado/service-recoveries.jsonl, oldest
// first. It defines the one Recovery type that is written, read back, sent
// over the host channel's recoveries verb, carried in beacons and shown by
// the CLI and the desktop page, together with the parsing every reader
// shares and the locked, atomic append every writer shares.
//
// register imports catalog (a recovery keeps the exact answering
// declaration it was asked from, catalog.Answering), refusal (a line that
// is not a recovery is a register_unreadable refusal) and safefile (the
// sidecar lock and the atomic replace). It must not import channel, fleet,
// repair, beacon or cli: it is a leaf that all of them share, so a reader
// of the register never links the code that talks to hosts.
package register
