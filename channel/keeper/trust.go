package keeper

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
)

// ErrUntrusted is wrapped by the error of a socket, or a socket directory,
// that another user could have planted or could replace: a Client dials
// hosts directly rather than hand such a socket a request (which names
// identity files, the agent socket and, for ensure, environment values),
// and Serve refuses to listen there.
var ErrUntrusted = errors.New("keeper socket not trusted")

// untrustedf is an error wrapping ErrUntrusted with the reason.
func untrustedf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUntrusted, fmt.Sprintf(format, args...))
}

// ownerOf is the uid owning st's file, or -1 when the system does not say.
func ownerOf(st fs.FileInfo) int {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return int(sys.Uid)
	}
	return -1
}

// checkSocketDir is the trust of the keeper's socket directory for uid:
// dir itself (not a symbolic link) is a directory owned by uid that
// neither its group nor others may write, and its parent, which could
// rename dir away, is owned by uid or root and, when its group or others
// may write it, sticky (as /tmp is). A missing dir is an error wrapping
// fs.ErrNotExist (nothing listens there yet; Serve creates it); every
// other refusal wraps ErrUntrusted and says why.
func checkSocketDir(dir string, uid int) error {
	st, err := os.Lstat(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return untrustedf("keeper socket directory: %v", err)
	}
	switch owner := ownerOf(st); {
	case st.Mode().Type() == fs.ModeSymlink:
		return untrustedf("keeper socket directory %s is a symbolic link", dir)
	case !st.IsDir():
		return untrustedf("keeper socket directory %s is not a directory", dir)
	case owner != uid:
		return untrustedf("keeper socket directory %s belongs to uid %d, not %d", dir, owner, uid)
	case st.Mode().Perm()&0o022 != 0:
		return untrustedf("keeper socket directory %s is writable by its group or others (mode %04o)", dir, st.Mode().Perm())
	}
	parent := filepath.Dir(dir)
	pst, err := os.Stat(parent)
	if err != nil {
		return untrustedf("keeper socket directory's parent: %v", err)
	}
	switch owner := ownerOf(pst); {
	case owner != uid && owner != 0:
		return untrustedf("keeper socket directory's parent %s belongs to uid %d, not %d or root", parent, owner, uid)
	case pst.Mode().Perm()&0o022 != 0 && pst.Mode()&fs.ModeSticky == 0:
		return untrustedf("keeper socket directory's parent %s is writable by its group or others and not sticky (mode %04o)", parent, pst.Mode().Perm())
	}
	return nil
}

// checkSocketFile is the trust of the keeper's socket for uid: a socket
// (not a symbolic link) owned by uid that neither its group nor others may
// write. A missing socket is an error wrapping fs.ErrNotExist; every other
// refusal wraps ErrUntrusted.
func checkSocketFile(sock string, uid int) error {
	st, err := os.Lstat(sock)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return untrustedf("keeper socket: %v", err)
	}
	switch owner := ownerOf(st); {
	case st.Mode().Type() != fs.ModeSocket:
		return untrustedf("keeper socket %s is not a socket (%v)", sock, st.Mode().Type())
	case owner != uid:
		return untrustedf("keeper socket %s belongs to uid %d, not %d", sock, owner, uid)
	case st.Mode().Perm()&0o022 != 0:
		return untrustedf("keeper socket %s is writable by its group or others (mode %04o)", sock, st.Mode().Perm())
	}
	return nil
}

// checkServer is the trust of the process serving conn: the kernel's word
// (peerUID) that it runs as uid. Checked before a byte of the request is
// written.
func checkServer(conn *net.UnixConn, uid int) error {
	got, err := peerUID(conn)
	if err != nil {
		return untrustedf("keeper socket server: %v", err)
	}
	if got != uid {
		return untrustedf("keeper socket is served by uid %d, not %d", got, uid)
	}
	return nil
}
