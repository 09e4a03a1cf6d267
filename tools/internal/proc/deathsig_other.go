//go:build !linux

package proc

import "syscall"

// sysProcAttr is nil where there is no parent-death signal: a child of a
// killed tool keeps running until someone stops it.
func sysProcAttr() *syscall.SysProcAttr { return nil }
