package beacon

import (
	"sort"
	"time"
	"unicode/utf8"

	"github.com/wisent/stado/release"
)

// Release block states.
const (
	ReleasesRead       = "read"       // the host's release state file was read (absent: no product installed)
	ReleasesUnreadable = "unreadable" // it could not be read; Cause says why
)

// Bounds of the release block, so a state file the host was handed cannot
// grow a beacon past what readers hold it to (MaxBytes).
const (
	// MaxReleaseProducts is how many products a beacon carries; the rest
	// are counted in Omitted.
	MaxReleaseProducts = 64
	// MaxReleaseText bounds each text of the block (a refusal sentence, a
	// cause) in bytes.
	MaxReleaseText = 512
)

// Releases is this host's release images as its state file held them at
// the pass: per product the active image, the exact backup and the last
// activation. A file that cannot be read is reported unreadable with the
// reason, never guessed from anything else.
type Releases struct {
	State string `json:"state"`
	// Cause says why the state file is unreadable.
	Cause    string           `json:"cause,omitempty"`
	Products []ProductRelease `json:"products,omitempty"`
	// Omitted counts the products left out past MaxReleaseProducts.
	Omitted int `json:"omitted,omitempty"`
}

// ProductRelease is one product's images on the host.
type ProductRelease struct {
	Product string        `json:"product"`
	Active  *ReleaseImage `json:"active,omitempty"`
	Backup  *ReleaseImage `json:"backup,omitempty"`
	// Last is the last activation attempt, whatever its outcome.
	Last *ReleaseActivation `json:"last,omitempty"`
}

// ReleaseImage is an installed image: its version and digest.
type ReleaseImage struct {
	Version string `json:"version"`
	SHA256  string `json:"sha256"`
}

// ReleaseActivation is the outcome of the last activation of a product.
type ReleaseActivation struct {
	Version string    `json:"version"`
	SHA256  string    `json:"sha256,omitempty"`
	Outcome string    `json:"outcome"`
	At      time.Time `json:"at"`
	// PID is the unit's main pid after the activation (0: none proven).
	PID int `json:"pid,omitempty"`
	// Refusal is the sentence of a failed proof, cut to MaxReleaseText.
	Refusal string `json:"refusal,omitempty"`
}

// ReadReleases reads the release state file under root (release.Root) as
// a beacon carries it. It never fails: an unreadable file is a block in
// state unreadable with the reason.
func ReadReleases(root string) *Releases {
	st, err := release.ReadHostState(root)
	return ReleasesOf(st, err)
}

// ReleasesOf is the beacon's block for a state read with err.
func ReleasesOf(st release.HostState, err error) *Releases {
	if err != nil {
		return &Releases{State: ReleasesUnreadable, Cause: clip(err.Error())}
	}
	names := make([]string, 0, len(st.Products))
	for p := range st.Products {
		names = append(names, p)
	}
	sort.Strings(names)
	out := &Releases{State: ReleasesRead}
	if len(names) > MaxReleaseProducts {
		out.Omitted = len(names) - MaxReleaseProducts
		names = names[:MaxReleaseProducts]
	}
	for _, p := range names {
		ps := st.Products[p]
		pr := ProductRelease{Product: clip(p), Active: imageOf(ps.Active), Backup: imageOf(ps.Backup)}
		if a := ps.Last; a != nil {
			pr.Last = &ReleaseActivation{Version: clip(a.Version), SHA256: clip(a.SHA256), Outcome: clip(a.Outcome),
				At: a.At, PID: a.PIDAfter, Refusal: clip(a.Refusal)}
		}
		out.Products = append(out.Products, pr)
	}
	return out
}

// Product returns the block of product, or nil.
func (r *Releases) Product(product string) *ProductRelease {
	if r == nil {
		return nil
	}
	for i := range r.Products {
		if r.Products[i].Product == product {
			return &r.Products[i]
		}
	}
	return nil
}

func imageOf(im *release.Image) *ReleaseImage {
	if im == nil {
		return nil
	}
	return &ReleaseImage{Version: clip(im.Version), SHA256: clip(im.SHA256)}
}

// clip cuts s to MaxReleaseText bytes at a rune boundary.
func clip(s string) string {
	if len(s) <= MaxReleaseText {
		return s
	}
	n := MaxReleaseText
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
