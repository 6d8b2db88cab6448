//go:build !linux && !darwin

package safefile

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// processStart knows no start times here: it can only say whether pid
// exists (signal 0), so a lock's holder is judged gone only when its pid
// is.
func processStart(pid int) (string, time.Time, error) {
	if pid <= 0 {
		return "", time.Time{}, os.ErrNotExist
	}
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return "", time.Time{}, os.ErrNotExist
	}
	return "", time.Time{}, nil
}

// pidNamespace is "": this system has no pid namespaces.
func pidNamespace() string { return "" }
