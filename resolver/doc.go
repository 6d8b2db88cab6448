// Package resolver owns stado://service/<name>: resolution through the
// registry directory (who may call a service, where it answers), the
// waiting list every resolver process publishes under ~/.stado, and the
// client side that records each wait: an http.RoundTripper and a local
// forwarding proxy (HTTP or plain TCP).
//
// Every request a resolver forwards is a wait with a phase: open while the
// channel to the service is being opened, answer once the request is sent
// and the first byte of the answer is awaited. The wait ends at that first
// byte (or when the request fails). A service that holds a request in phase
// answer longer than the fleet's service_resolver.refresh_seconds is held:
// the resolver refuses new requests to it at once, so clients fail fast
// instead of piling up, and the peer pass of package repair reads the
// published list to recover it on the host that serves it.
//
// resolver imports registry (the directory and the resolver settings),
// store (the registry's store), safefile (the atomic file write and the
// lock) and refusal (its refusals' codes) only. It
// never imports channel, beacon or repair: it runs in client processes that
// have no business with SSH.
package resolver
