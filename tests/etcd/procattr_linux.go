package etcdtest

import "syscall"

// memberProcAttr: a process group of its own, and SIGKILL when the test
// process dies without stopping the member.
func memberProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
