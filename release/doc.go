// Package release is the data of the release flow: the signed manifest a
// publisher writes for one product build, the content-addressed chunks its
// bytes are stored in, the host's release state (active and backup images),
// and the request and result of one activation on a host. It holds no host
// action and no SSH: the host end lives in release/hostend, the fleet-wide
// converge and show in release/rollout, the bare-host bootstrap in
// release/bootstrap.
//
// stado imports: refusal, safefile, store.
package release
