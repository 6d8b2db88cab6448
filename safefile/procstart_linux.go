package safefile

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// userHZ is the unit of /proc/PID/stat's start time: USER_HZ, which Linux
// fixes at 100 for every architecture's user-space interface.
const userHZ = 100

var boot struct {
	once sync.Once
	id   string
	at   time.Time
}

// bootInfo reads this boot's id and its wall-clock time (btime).
func bootInfo() (string, time.Time) {
	boot.once.Do(func() {
		if b, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
			boot.id = strings.TrimSpace(string(b))
		}
		if b, err := os.ReadFile("/proc/stat"); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(line, "btime "); ok {
					if s, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
						boot.at = time.Unix(s, 0).UTC()
					}
				}
			}
		}
	})
	return boot.id, boot.at
}

// processStart returns the start identity of pid ("BOOTID/TICKS") and its
// wall-clock start. A pid that does not run is an error wrapping
// os.ErrNotExist.
func processStart(pid int) (string, time.Time, error) {
	if pid <= 0 {
		return "", time.Time{}, os.ErrNotExist
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return "", time.Time{}, os.ErrNotExist
	}
	if err != nil {
		return "", time.Time{}, err
	}
	// the command name is in parentheses and may hold anything; the fields
	// after the last ')' start with the state (field 3); starttime is 22
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return "", time.Time{}, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 20 {
		return "", time.Time{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields)+2)
	}
	if fields[0] == "Z" || fields[0] == "X" {
		return "", time.Time{}, os.ErrNotExist // a zombie holds no file
	}
	ticks, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("/proc/%d/stat: start time %q", pid, fields[19])
	}
	id, at := bootInfo()
	var started time.Time
	if !at.IsZero() {
		started = at.Add(time.Duration(ticks) * time.Second / userHZ)
	}
	return id + "/" + strconv.FormatUint(ticks, 10), started, nil
}

// pidNamespace names this process's pid namespace: the text of the
// /proc/self/ns/pid link ("pid:[4026531836]"), or "" when it cannot be read.
func pidNamespace() string {
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return ns
}
