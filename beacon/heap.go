package beacon

import (
	"os"
	"runtime/debug"
)

// HostGCPercent is the host process's GC target unless GOGC says
// otherwise. Its live heap is about 1 MB, under the runtime's 4 MB floor
// for the default of 100, so freed pages stayed mapped up to that floor;
// at 25 the floor is 1 MB: measured with 20 services (docs/bench.md), about
// 2 MB less resident for a collection or two of a 1 MB heap each pass.
const HostGCPercent = 25

// SetHostGCTarget sets HostGCPercent for this process unless its
// environment sets GOGC.
func SetHostGCTarget() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(HostGCPercent)
	}
}
