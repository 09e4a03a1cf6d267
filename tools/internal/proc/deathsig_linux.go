package proc

import "syscall"

// sysProcAttr makes the child die with its parent, even when the parent is
// killed (a test timeout), so no service outlives the tool that started it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
