package units

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// PortListener is a listening socket with its port.
type PortListener struct {
	Listener
	Port int `json:"port"`
}

// UnitListeners returns the TCP sockets listening on any port that are
// held by a process of unit (a process whose cgroup names the unit, so the
// unit's whole process tree), ordered by port. procRoot is /proc; tests
// point it at fixtures. A unit with no process, or none listening, has
// none.
func UnitListeners(procRoot, unit string) ([]PortListener, error) {
	if unit == "" {
		return nil, nil
	}
	pids := unitPIDs(procRoot, unit)
	if len(pids) == 0 {
		return nil, nil
	}
	held := map[uint64]int{}
	for _, pid := range pids {
		fdDir := filepath.Join(procRoot, strconv.Itoa(pid), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
			if err != nil || !strings.HasPrefix(link, "socket:[") {
				continue
			}
			inode, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]"), 10, 64)
			if err == nil {
				if _, seen := held[inode]; !seen {
					held[inode] = pid
				}
			}
		}
	}
	if len(held) == 0 {
		return nil, nil
	}
	var out []PortListener
	for _, name := range []string{"tcp", "tcp6"} {
		all, err := allListening(filepath.Join(procRoot, "net", name))
		if err != nil {
			return nil, err
		}
		for _, l := range all {
			pid, ok := held[l.Inode]
			if !ok {
				continue
			}
			l.PID, l.Unit = pid, unit
			if comm, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "comm")); err == nil {
				l.Program = strings.TrimSpace(string(comm))
			}
			out = append(out, l)
		}
	}
	for i := 1; i < len(out); i++ { // few sockets: insertion sort by port
		for j := i; j > 0 && out[j].Port < out[j-1].Port; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out, nil
}

// unitPIDs are the processes whose cgroup names unit.
func unitPIDs(procRoot, unit string) []int {
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cg, err := os.ReadFile(filepath.Join(procRoot, e.Name(), "cgroup"))
		if err == nil && unitOfCgroup(cg) == unit {
			pids = append(pids, pid)
		}
	}
	return pids
}

// allListening reads every listening socket of one /proc/net/tcp-format
// file; a missing file (no IPv6) holds none.
func allListening(path string) ([]PortListener, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var out []PortListener
	sc := bufio.NewScanner(bytes.NewReader(data))
	first := true
	for sc.Scan() {
		if first {
			first = false
			continue
		}
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[3] != tcpListen {
			continue
		}
		addr, port, ok := decodeProcAddr(f[1])
		if !ok {
			continue
		}
		inode, err := strconv.ParseUint(f[9], 10, 64)
		if err != nil {
			continue
		}
		out = append(out, PortListener{Listener: Listener{Address: addr, Inode: inode}, Port: port})
	}
	return out, sc.Err()
}
