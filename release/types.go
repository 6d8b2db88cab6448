package release

import (
	"time"

	"github.com/wisent/stado/registry"
)

// Kinds of the documents of the release flow.
const (
	KindManifest = "stado.release.manifest" // the signed bytes
	KindSigned   = "stado.release.signed"   // manifest + signature, as stored
	KindState    = "stado.release.state"    // a host's release state file
)

// Manifest says which bytes are one build of a product. Its JSON encoding is
// what the publisher's key signs; hosts verify it against keys pinned on the
// host, never keys read from the store.
type Manifest struct {
	Kind    string `json:"kind"`
	Product string `json:"product"`
	Version string `json:"version"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
	// SHA256 is the hex digest of the whole file; Size its length.
	SHA256 string  `json:"sha256"`
	Size   int64   `json:"size"`
	Chunks []Chunk `json:"chunks"`
	// Publisher is the signing key's minisign id (16 hex digits).
	Publisher   string    `json:"publisher"`
	PublishedAt time.Time `json:"published_at"`
	Reason      string    `json:"reason,omitempty"`
}

// Chunk is one stored piece of a file, content-addressed by its digest.
type Chunk struct {
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// Signed is a manifest as the store holds it: the exact signed bytes and
// the minisign signature over them.
type Signed struct {
	Kind      string `json:"kind"`
	Manifest  []byte `json:"manifest"`  // the JSON of a Manifest, byte for byte as signed
	Signature string `json:"signature"` // minisign signature text
}

// Image is one installed build on a host: an immutable directory named by
// the digest, holding the product's program.
type Image struct {
	Product string `json:"product"`
	Version string `json:"version"`
	SHA256  string `json:"sha256"`
	// Path is the program inside the image directory.
	Path string `json:"path"`
}

// HostState is a host's release state file: per product the active image,
// the exact backup, and the last activation's evidence.
type HostState struct {
	Kind     string                  `json:"kind"`
	Products map[string]ProductState `json:"products"`
}

// ProductState is one product's images on a host.
type ProductState struct {
	Active *Image `json:"active,omitempty"`
	Backup *Image `json:"backup,omitempty"`
	// Last is the evidence of the last activation attempt, kept whatever
	// its outcome.
	Last *Activation `json:"last,omitempty"`
}

// Activation outcomes.
const (
	OutcomeActivated = "activated" // the new image took over and serves
	OutcomeUnchanged = "unchanged" // the declared image was already active
	OutcomeRestored  = "restored"  // the new image failed; the backup serves again
	OutcomeFailed    = "failed"    // the new image failed and the backup could not be proven
	OutcomeInstalled = "installed" // installed and active with no unit to restart
)

// Activation is the evidence of one activation on a host.
type Activation struct {
	Product string    `json:"product"`
	Version string    `json:"version"`
	SHA256  string    `json:"sha256"`
	At      time.Time `json:"at"`
	Outcome string    `json:"outcome"`
	// Unit is the unit restarted; PIDBefore and PIDAfter its main pids, Exe
	// what /proc/PID/exe (or launchctl print) named after the restart.
	Unit      string `json:"unit,omitempty"`
	PIDBefore int    `json:"pid_before,omitempty"`
	PIDAfter  int    `json:"pid_after,omitempty"`
	Exe       string `json:"exe,omitempty"`
	// Serving is the serving read's sentence (port owner, ready).
	Serving string `json:"serving,omitempty"`
	// Refusal is the sentence of a failed proof; LastExit, Runs and Stderr
	// are the failing image's evidence.
	Refusal  string `json:"refusal,omitempty"`
	LastExit int    `json:"last_exit,omitempty"`
	Runs     int    `json:"runs,omitempty"`
	Stderr   string `json:"stderr,omitempty"`
	// Note says why an activation did less than a restart and proof (the
	// unit is not installed yet).
	Note string `json:"note,omitempty"`
	// Restored is the backup brought back after a failure, with its proof.
	Restored *Proof `json:"restored,omitempty"`
}

// Proof is a process proven to run an image.
type Proof struct {
	Version string `json:"version"`
	SHA256  string `json:"sha256"`
	PID     int    `json:"pid"`
	Exe     string `json:"exe"`
	Serving string `json:"serving,omitempty"`
}

// ActivateRequest asks a host to make one product version active: fetch and
// verify its bytes, install the image, keep the active one as backup,
// switch, restart Unit and prove the takeover. Mode "plan" says what apply
// would do and changes nothing.
type ActivateRequest struct {
	Product string `json:"product"`
	Version string `json:"version"`
	// Pinned: the registry pins exactly this version, so an older version
	// than the active one is allowed.
	Pinned bool `json:"pinned,omitempty"`
	// Scope and Unit name the unit that runs the product on this host; empty
	// Unit installs and switches without a restart.
	Scope string `json:"scope,omitempty"`
	Unit  string `json:"unit,omitempty"`
	// Port is the directory port the unit must own once it runs (0: none);
	// Address its declared listen address.
	Port    int    `json:"port,omitempty"`
	Address string `json:"address,omitempty"`
	// Service is the declaration of the unit when it names a
	// service-protocol executable: the serving read then also needs its
	// ready operation to say ready, as `service serving` does.
	Service *registry.Service `json:"service,omitempty"`
	// Wait bounds the proof of the new image (and again of a restored one).
	Wait time.Duration `json:"wait"`
	Mode string        `json:"mode"`
}

// ActivateResult is what one activation did, with its evidence.
type ActivateResult struct {
	Product string `json:"product"`
	// Outcome is one of the Outcome constants ("plan" mode: what apply
	// would do, Outcome "unchanged" or "would_activate").
	Outcome    string      `json:"outcome"`
	Active     *Image      `json:"active,omitempty"`
	Backup     *Image      `json:"backup,omitempty"`
	Activation *Activation `json:"activation,omitempty"`
	// Fetched says where the bytes came from ("store", "peer HOST", or ""
	// when the image was already installed).
	Fetched string `json:"fetched,omitempty"`
}

// OutcomeWouldActivate is a plan's outcome when apply would change the host.
const OutcomeWouldActivate = "would_activate"

// StateResult is a host's release state read over the channel, with which
// images the units' running processes run.
type StateResult struct {
	State HostState `json:"state"`
	// Running says, per product, whether the unit's main pid runs the
	// active image (filled when the request named units).
	Running map[string]RunningImage `json:"running,omitempty"`
}

// RunningImage is what a product's unit runs now.
type RunningImage struct {
	Unit     string `json:"unit"`
	PID      int    `json:"pid"`
	Exe      string `json:"exe,omitempty"`
	OnActive bool   `json:"on_active"`
}

// StateRequest names the units whose running image to read, by product.
type StateRequest struct {
	Units map[string]UnitOf `json:"units,omitempty"`
}

// UnitOf is one unit of a scope.
type UnitOf struct {
	Scope string `json:"scope"`
	Unit  string `json:"unit"`
}
