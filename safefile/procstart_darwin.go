package safefile

import (
	"errors"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// processStart returns the start identity of pid (the kernel's start
// timeval as "SEC.USEC") and its wall-clock start. A pid that does not run
// is an error wrapping os.ErrNotExist.
func processStart(pid int) (string, time.Time, error) {
	if pid <= 0 {
		return "", time.Time{}, os.ErrNotExist
	}
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if errors.Is(err, syscall.ESRCH) {
		return "", time.Time{}, os.ErrNotExist
	}
	if err != nil {
		return "", time.Time{}, err
	}
	if int(kp.Proc.P_pid) != pid {
		return "", time.Time{}, os.ErrNotExist // the kernel answers an empty record for a missing pid
	}
	tv := kp.Proc.P_starttime
	return strconv.FormatInt(int64(tv.Sec), 10) + "." + strconv.FormatInt(int64(tv.Usec), 10),
		time.Unix(int64(tv.Sec), int64(tv.Usec)*1000).UTC(), nil
}

// pidNamespace is "": this system has no pid namespaces.
func pidNamespace() string { return "" }
