package hostend

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"aead.dev/minisign"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/release"
	"github.com/wisent/stado/store"
	"github.com/wisent/stado/units"
)

// Defaults of an activation's proof.
const (
	DefaultWait   = 30 * time.Second
	MaxWait       = 30 * time.Minute
	DefaultPoll   = 50 * time.Millisecond
	DefaultSettle = time.Second
	// logLines is how many log lines a failed proof reads for its evidence.
	logLines = 10
)

// Source gives the signed manifests and the bytes of the release flow.
type Source interface {
	// Signed reads the signed manifest of product version for goos/goarch
	// (a not_found refusal when none is published).
	Signed(ctx context.Context, product, version, goos, goarch string) (release.Signed, error)
	// Fetch returns m's bytes with every chunk's digest checked, and says
	// where they came from ("store", "peer HOST").
	Fetch(ctx context.Context, m release.Manifest) ([]byte, string, error)
}

// StoreSource is the store as a Source, through package release.
type StoreSource struct{ Store store.Store }

// Signed implements Source.
func (s StoreSource) Signed(ctx context.Context, product, version, goos, goarch string) (release.Signed, error) {
	return release.LoadSigned(ctx, s.Store, product, version, goos, goarch)
}

// Fetch implements Source.
func (s StoreSource) Fetch(ctx context.Context, m release.Manifest) ([]byte, string, error) {
	b, err := release.Fetch(ctx, s.Store, m)
	return b, "store", err
}

// Init is the host's init system as an activation uses it. Implementations
// touch the host.
type Init interface {
	// Restart restarts the unit of scope (starting it when it is stopped)
	// and waits for the init system's job.
	Restart(ctx context.Context, scope, unit string) error
	// Show reads the unit's verdict (main pid, last exit, starts).
	Show(ctx context.Context, scope, unit string) (units.Verdict, error)
	// Logs returns the unit's last lines, oldest first.
	Logs(ctx context.Context, scope, unit string, lines int) ([]string, error)
}

// ServingReading is one serving read of a unit: whether it owns its
// directory port (and, where a service protocol is declared, says ready),
// and the sentence that says what was seen.
type ServingReading struct {
	Serving  bool
	Sentence string
}

// Host is this host's release directory and what an activation acts
// through. Root and Init are required for an activation that names a unit;
// every other field has a default.
type Host struct {
	// Root is the release directory (release.Root).
	Root string
	// GOOS and GOARCH name the build this host runs; "" means runtime's.
	GOOS, GOARCH string
	// Source gives manifests and bytes; nil refuses every activation.
	Source Source
	// Keys reads the pinned public keys; nil means
	// release.LoadPublicKeys(release.KeysDir(Root)).
	Keys func() ([]minisign.PublicKey, error)
	// Verify checks a signed manifest against the pinned keys and that it
	// names exactly product, version, goos, goarch; nil means
	// release.VerifySigned.
	Verify func(s release.Signed, keys []minisign.PublicKey, product, version, goos, goarch string) (release.Manifest, error)
	// Compare orders two versions; nil means release.CompareVersions.
	Compare func(a, b string) int
	// Init restarts and reads units.
	Init Init
	// Exe names the executable of pid, the main process of unit (ProcExe,
	// LaunchctlExe).
	Exe func(ctx context.Context, scope, unit string, pid int) (string, error)
	// Serving reads whether unit owns its directory port; nil when the
	// host cannot read it (an activation naming a port is then refused).
	Serving func(ctx context.Context, scope, unit string, port int, address string) (ServingReading, error)
	// BeaconProof reads the stado version of this host's newest beacon
	// published after since; it proves a stado activation. An error is
	// "not yet".
	BeaconProof func(ctx context.Context, since time.Time) (string, error)
	// Now and After are the proof's clock; nil means the real one.
	Now   func() time.Time
	After func(d time.Duration) <-chan time.Time
	// Poll is the interval of unit reads while proving (DefaultPoll);
	// Settle how long a fresh pid must hold (DefaultSettle).
	Poll   time.Duration
	Settle time.Duration
}

func (h *Host) goos() string {
	if h.GOOS != "" {
		return h.GOOS
	}
	return runtime.GOOS
}

func (h *Host) goarch() string {
	if h.GOARCH != "" {
		return h.GOARCH
	}
	return runtime.GOARCH
}

func (h *Host) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

func (h *Host) after(d time.Duration) <-chan time.Time {
	if h.After != nil {
		return h.After(d)
	}
	return time.After(d)
}

func (h *Host) poll() time.Duration {
	if h.Poll > 0 {
		return h.Poll
	}
	return DefaultPoll
}

func (h *Host) settle() time.Duration {
	if h.Settle > 0 {
		return h.Settle
	}
	return DefaultSettle
}

func (h *Host) keys() ([]minisign.PublicKey, error) {
	if h.Keys != nil {
		return h.Keys()
	}
	return release.LoadPublicKeys(release.KeysDir(h.Root))
}

func (h *Host) verify(s release.Signed, keys []minisign.PublicKey, product, version string) (release.Manifest, error) {
	if h.Verify != nil {
		return h.Verify(s, keys, product, version, h.goos(), h.goarch())
	}
	return release.VerifySigned(s, keys, product, version, h.goos(), h.goarch())
}

func (h *Host) compare(a, b string) int {
	if h.Compare != nil {
		return h.Compare(a, b)
	}
	return release.CompareVersions(a, b)
}

// ManagerInit is an Init over the units.Manager of each scope, opened per
// call by Open (channel/local's Manager).
type ManagerInit struct {
	Open func(ctx context.Context, scope string) (units.Manager, func(), error)
}

func (m ManagerInit) with(ctx context.Context, scope string, fn func(units.Manager) error) error {
	if m.Open == nil {
		return refusal.New(refusal.NoManager, "this host has no %s manager wired", scope)
	}
	mgr, closeFn, err := m.Open(ctx, scope)
	if err != nil {
		return err
	}
	defer closeFn()
	return fn(mgr)
}

// Restart implements Init. A job that finished other than done is not an
// error here: the proof reads the unit's verdict, which says why.
func (m ManagerInit) Restart(ctx context.Context, scope, unit string) error {
	return m.with(ctx, scope, func(mgr units.Manager) error {
		err := mgr.Restart(ctx, unit)
		var job *units.JobError
		if errors.As(err, &job) {
			return nil
		}
		return err
	})
}

// Show implements Init.
func (m ManagerInit) Show(ctx context.Context, scope, unit string) (units.Verdict, error) {
	var v units.Verdict
	err := m.with(ctx, scope, func(mgr units.Manager) error {
		var err error
		v, err = mgr.Show(ctx, unit)
		return err
	})
	return v, err
}

// Logs implements Init.
func (m ManagerInit) Logs(ctx context.Context, scope, unit string, lines int) ([]string, error) {
	var ls []string
	err := m.with(ctx, scope, func(mgr units.Manager) error {
		var err error
		ls, err = mgr.Logs(ctx, unit, lines)
		return err
	})
	return ls, err
}

// checkWait bounds req.Wait: 0 means DefaultWait.
func checkWait(w time.Duration) (time.Duration, error) {
	switch {
	case w < 0 || w > MaxWait:
		return 0, refusal.New(refusal.InvalidDuration, "wait %s is outside 0 to %s", w, MaxWait)
	case w == 0:
		return DefaultWait, nil
	}
	return w, nil
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

func imageLabel(im *release.Image) string {
	if im == nil {
		return "none"
	}
	return fmt.Sprintf("%s (%s)", im.Version, short(im.SHA256))
}

// NoSource is the Source of a host whose store cannot be opened: every
// read answers Err, so an activation says why while a state read, which
// needs no store, still works.
type NoSource struct{ Err error }

// Signed implements Source.
func (s NoSource) Signed(context.Context, string, string, string, string) (release.Signed, error) {
	return release.Signed{}, fmt.Errorf("open the store: %w", s.Err)
}

// Fetch implements Source.
func (s NoSource) Fetch(context.Context, release.Manifest) ([]byte, string, error) {
	return nil, "", fmt.Errorf("open the store: %w", s.Err)
}
