//go:build !linux

package vmtest

import "syscall"

// qemuProcAttr: the guests run on Linux hosts (KVM or TCG from Debian's
// packages); elsewhere QEMU gets no attributes.
func qemuProcAttr() *syscall.SysProcAttr { return nil }
