// Package release is the data of the release flow: the signed manifest a
// publisher writes for one product build, the content-addressed chunks its
// bytes are stored in, the host's release state (active and backup images),
// and the request and result of one activation on a host. It holds no host
// action and no SSH: the host end lives in release/hostend, the fleet-wide
// converge and show in release/rollout, the bare-host bootstrap in
// release/bootstrap.
//
// It owns the release core as well: the grammar of products and versions,
// minisign keys and signatures (aead.dev/minisign, the minisign tool's own
// file formats), the chunked, content-addressed store objects (Publish,
// LoadSigned, Fetch, Published, Prune) and the one write of a declared
// version (Declare, through registry.Update).
//
// stado imports: refusal, registry (the declared versions and their
// grammar), safefile, store.
package release
