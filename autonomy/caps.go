package autonomy

import (
	"github.com/wisent/stado/fleet"
	"github.com/wisent/stado/registry"
)

// Caps bound an enforcing cycle's blast radius. They are fleet's, which
// service converge applies too, so both read one arithmetic.
type Caps = fleet.Caps

// Requested is what a command line asks for; zero fields ask nothing.
type Requested = fleet.Requested

// DefaultCaps are the caps when neither the registry nor the command
// names one (fleet.DefaultCaps).
var DefaultCaps = fleet.DefaultCaps

// ResolveCaps combines the registry's autonomy section with the command's
// request (fleet.ResolveCaps).
func ResolveCaps(a registry.Autonomy, req Requested) (Caps, error) {
	return fleet.ResolveCaps(a, req)
}
