// Package desktop is Stado Desktop: a local web page, served by `stado
// desktop` from this binary, over the read half and the write half.
//
// The page is rendered with html/template from templates and assets
// embedded in the binary (no build step, nothing loaded from outside).
// The services table is the join `service list` makes (beacon.View, no
// SSH); the inspector says one row's evidence in full; the operations
// (read a host's recovery register, read a unit's log, restart, ensure,
// converge and retire a declared service, each change confirmed first) go
// through package fleet over the host channel. The same server answers the
// local JSON API under /api/v1/ (api.go, docs/api.md) behind the same
// checks.
//
// The server listens on loopback only. Every request carries the access
// token printed once in the page's URL (a cookie after the first visit),
// every state-changing request carries the page's CSRF token, and no
// secret reaches the browser: declared environment values are masked with
// fleet.MaskEnv, as the CLI masks them.
//
// desktop imports the read half (beacon, catalog, registry, and store for
// the store the page reads and watches), release/rollout (where each row's
// product stands against its declared version, from the same beacons, as
// `release version show` reads it), the write half
// (fleet, its only road to a host: the server takes a fleet.Connector),
// convergence (what a converge acts from, read as `service converge`
// reads it), register (the recovery rows it shows) and refusal. It never imports
// channel or repair (the module's architecture test holds it to that); cli imports
// desktop, never the reverse.
package desktop
