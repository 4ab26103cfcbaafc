package vmtest

import "syscall"

// qemuProcAttr: QEMU's own process group (a terminal's Ctrl-C reaches us,
// and we clean up); killed if we die.
func qemuProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
