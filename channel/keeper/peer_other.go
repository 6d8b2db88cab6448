//go:build !linux && !darwin

package keeper

import (
	"errors"
	"net"
)

// peerUID cannot tell who is at the other end here, so the keeper serves
// no one (clients fall back to direct connections).
func peerUID(*net.UnixConn) (int, error) {
	return -1, errors.New("peer credentials are not available on this system")
}
