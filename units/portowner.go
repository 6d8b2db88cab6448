package units

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Listener is one socket listening on a port, with its owner when this
// host's process table shows it.
type Listener struct {
	Address string `json:"address"`
	Inode   uint64 `json:"inode"`
	PID     int    `json:"pid,omitempty"`
	Program string `json:"program,omitempty"`
	Unit    string `json:"unit,omitempty"`
}

// PortOwners finds the TCP sockets listening on port (procRoot/net/tcp and
// tcp6), the process holding each (its fd links) and that process's
// systemd unit (its cgroup). procRoot is /proc; tests point it at fixtures.
// Nothing listening is an empty list. A socket whose process is outside
// this host's process table (another PID namespace) has no owner.
func PortOwners(procRoot string, port int) ([]Listener, error) {
	var ls []Listener
	for _, name := range []string{"tcp", "tcp6"} {
		found, err := listeningSockets(filepath.Join(procRoot, "net", name), port)
		if err != nil {
			return nil, err
		}
		ls = append(ls, found...)
	}
	owners := socketOwners(procRoot, ls)
	for i := range ls {
		pid, ok := owners[ls[i].Inode]
		if !ok {
			continue
		}
		ls[i].PID = pid
		if comm, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "comm")); err == nil {
			ls[i].Program = strings.TrimSpace(string(comm))
		}
		if cg, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "cgroup")); err == nil {
			ls[i].Unit = unitOfCgroup(cg)
		}
	}
	return ls, nil
}

// tcpListen is the st column of a listening socket in /proc/net/tcp.
const tcpListen = "0A"

// listeningSockets is what one /proc/net/tcp-format file lists as
// listening on port (allListening reads the file).
func listeningSockets(path string, port int) ([]Listener, error) {
	all, err := allListening(path)
	var out []Listener
	for _, l := range all {
		if l.Port == port {
			out = append(out, l.Listener)
		}
	}
	return out, err
}

// decodeProcAddr reads "0100007F:1F90" (IPv4, or 32 hex digits for IPv6,
// each 32-bit word in host byte order, little-endian here) into an address
// and port.
func decodeProcAddr(s string) (string, int, bool) {
	hexAddr, hexPort, ok := strings.Cut(s, ":")
	if !ok {
		return "", 0, false
	}
	port, err := strconv.ParseUint(hexPort, 16, 16)
	if err != nil {
		return "", 0, false
	}
	raw := make([]byte, 0, 16)
	for i := 0; i+8 <= len(hexAddr); i += 8 {
		w, err := strconv.ParseUint(hexAddr[i:i+8], 16, 32)
		if err != nil {
			return "", 0, false
		}
		raw = append(raw, byte(w), byte(w>>8), byte(w>>16), byte(w>>24))
	}
	switch len(raw) {
	case 4:
		return fmt.Sprintf("%d.%d.%d.%d", raw[0], raw[1], raw[2], raw[3]), int(port), true
	case 16:
		var parts []string
		for i := 0; i < 16; i += 2 {
			parts = append(parts, strconv.FormatUint(uint64(raw[i])<<8|uint64(raw[i+1]), 16))
		}
		return "[" + strings.Join(parts, ":") + "]", int(port), true
	}
	return "", 0, false
}

// socketOwners maps the inodes of ls to the first process holding them.
func socketOwners(procRoot string, ls []Listener) map[uint64]int {
	want := map[string]uint64{}
	for _, l := range ls {
		want["socket:["+strconv.FormatUint(l.Inode, 10)+"]"] = l.Inode
	}
	owners := map[uint64]int{}
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return owners
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		fdDir := filepath.Join(procRoot, e.Name(), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue // gone, or not ours to read
		}
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
			if err != nil {
				continue
			}
			if inode, ok := want[link]; ok {
				if _, seen := owners[inode]; !seen {
					owners[inode] = pid
				}
			}
		}
		if len(owners) == len(want) {
			break
		}
	}
	return owners
}

// unitOfCgroup names the systemd unit of a /proc/PID/cgroup: the last
// path element ending in .service (or .scope) of the name=systemd hierarchy
// on a hybrid host, or else of the unified one (a systemd that runs unified
// beside a hybrid host's name=systemd, as in a container, leaves the
// latter at "/").
func unitOfCgroup(data []byte) string {
	var named, unified string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		switch {
		case f[1] == "name=systemd":
			named = f[2]
		case f[0] == "0" && f[1] == "":
			unified = f[2]
		}
	}
	if u := unitOfPath(named); u != "" {
		return u
	}
	return unitOfPath(unified)
}

func unitOfPath(path string) string {
	parts := strings.Split(path, "/")
	for i := len(parts) - 1; i >= 0; i-- {
		if strings.HasSuffix(parts[i], ".service") || strings.HasSuffix(parts[i], ".scope") {
			return parts[i]
		}
	}
	return ""
}
