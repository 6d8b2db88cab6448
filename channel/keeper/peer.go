//go:build linux || darwin

package keeper

import (
	"fmt"
	"net"
)

// peerUID is the uid of the process at the other end of conn, from the
// kernel (fdPeerUID: SO_PEERCRED on linux, LOCAL_PEERCRED on darwin), not
// from anything the peer says.
func peerUID(conn *net.UnixConn) (int, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return -1, fmt.Errorf("peer credentials: %w", err)
	}
	uid, cerr := -1, error(nil)
	if err := raw.Control(func(fd uintptr) { uid, cerr = fdPeerUID(int(fd)) }); err != nil {
		return -1, fmt.Errorf("peer credentials: %w", err)
	}
	if cerr != nil {
		return -1, fmt.Errorf("peer credentials: %w", cerr)
	}
	return uid, nil
}
