package beacon

import (
	"os"
	"strings"
	"time"
)

// MachineIdentity names this machine and process for its beacons: the
// hostname, the machine and boot ids where Linux keeps them (empty
// elsewhere), this process's pid and started (in UTC). It reads local
// files only.
func MachineIdentity(started time.Time) Identity {
	hostname, _ := os.Hostname()
	return Identity{Hostname: hostname, MachineID: readTrim("/etc/machine-id"),
		BootID: readTrim("/proc/sys/kernel/random/boot_id"), PID: os.Getpid(), Started: started.UTC()}
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
