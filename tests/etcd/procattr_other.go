//go:build !linux

package etcdtest

import "syscall"

// memberProcAttr: a process group of its own (this system has no
// parent-death signal; the test stops its members itself).
func memberProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
