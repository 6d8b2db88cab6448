package units

import (
	"context"
	"os"
	"runtime"

	"github.com/wisent/stado/declaration"
)

// OpenHostManager connects to the init system a host's stado process
// drives: systemd's system manager, or launchd's domain of this user
// (system for root), with the directories an administrator installs units
// in. home is the login user's home. The returned func closes it.
func OpenHostManager(ctx context.Context, home string) (Manager, []string, func(), error) {
	scope := declaration.ScopeSystem
	if runtime.GOOS == declaration.OSDarwin && os.Getuid() != 0 {
		scope = declaration.ScopeUser
	}
	m, closeFn, err := Open(ctx, runtime.GOOS, scope, home)
	return m, []string{declaration.UnitDir(runtime.GOOS, scope, home)}, closeFn, err
}
