package desktop

import (
	"context"
	"os/exec"
)

// OpenBrowser asks the desktop to open url (xdg-open, else macOS's open)
// and does not wait for it; false when no opener could be started. The
// opener's argv is readable by every user: give it a one-time address
// (Server.OpenURL), never the token.
func OpenBrowser(ctx context.Context, url string) bool {
	for _, argv := range [][]string{{"xdg-open", url}, {"open", url}} {
		if p, err := exec.LookPath(argv[0]); err == nil {
			cmd := exec.CommandContext(ctx, p, argv[1:]...)
			if err := cmd.Start(); err == nil {
				go cmd.Wait()
				return true
			}
		}
	}
	return false
}
