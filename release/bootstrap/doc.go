// Package bootstrap turns a host that runs only sshd into a stado host, over
// plain SSH and idempotently (`stado host bootstrap HOST`, docs/release.md).
// Run reads the host's OS and architecture, fetches and verifies the stado
// image for them from the store against the keys the operator names, and
// then walks a fixed list of steps — install the image, pin the keys, write
// the release state and the current link, link /usr/local/bin/stado to it,
// write the store URL, install and start stado.service, restrict the
// operator's key to the channel — each of which first reads whether its
// effect is already on the host and then does nothing. Every remote action
// is one argv through a Shell; no shell string is built here (the SSH end
// quotes each word for the remote side). The only files it reads on the
// operator's machine are the key files the operator names
// (Request.ReadKeys).
//
// bootstrap imports release (the host layout, the state document and the
// signed-manifest contract: LoadSigned, VerifySigned, Fetch), units (the
// renderer `stado host unit render` uses, so the unit is the catalog's stado
// product rendered, never hand-written), catalog (that product), declaration
// (its OS and scope names), refusal (the codes of what it refuses), store
// (where the image comes from) and registry (Target: the host and the stado
// version the registry declares for it). It must not import channel/sshclient: only
// cli and channel/keeper build SSH connections, and cli hands a Shell in.
package bootstrap
