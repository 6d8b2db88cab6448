// Package hostend is the host end of a release activation: on the host
// that runs a product, one call checks the signed manifest against the
// keys pinned on this host, fetches and verifies the bytes, installs them
// as an immutable content-addressed image, keeps the active image as the
// exact backup, switches the product's current link, restarts the unit
// through the init system and proves the takeover (a fresh main pid whose
// executable is the new image, then the serving read). A failed proof
// switches back to the backup and proves it serves again.
//
// What it acts through is injected (Host's fields): the manifest and bytes
// source (the store through package release by default), the pinned keys,
// the init system (Init), the executable reader (/proc on Linux, launchctl
// print on darwin), the serving read, the clock. channel/local builds a
// Host from its own init system and /proc and carries the release-activate
// and release-state verbs to it.
//
// hostend imports release (the data, host paths and the verification
// contract), store (the default source), units (verdicts, the init system's
// Manager, launchctl print parsing, the failing sentence), refusal and
// safefile. It must not import channel or the write half: it is the far
// end, and knows nothing of registries or fleets.
package hostend
