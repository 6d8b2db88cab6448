//go:build unix

package svcproto

import (
	"os/exec"
	"syscall"
)

// ownGroup starts cmd as the leader of a new process group, as cred's
// account when cred is not nil.
func ownGroup(cmd *exec.Cmd, cred *Credential) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if cred != nil {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: cred.UID, Gid: cred.GID, Groups: cred.Groups}
	}
}

// endGroup kills what is left of the process group cmd led (its pid is the
// group's id); the leader itself has been waited for.
func endGroup(cmd *exec.Cmd) {
	if cmd.Process != nil && cmd.Process.Pid > 0 {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
